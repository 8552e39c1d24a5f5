"""How the fuzzers compare an output with its reference."""

from __future__ import annotations

from typing import Any

import numpy as np


def same_values(x: Any, y: Any, loose: bool = False) -> bool:
    """Equal dtypes and shapes; equal ints and bools, close floats (NaNs equal).
    ``loose``: the value went through float32, whose functions C++ and NumPy
    round differently (float32 outputs always compare so)."""
    x, y = np.asarray(x), np.asarray(y)
    if x.dtype != y.dtype or x.shape != y.shape:
        return False
    if x.dtype.kind != "f":
        return bool(np.array_equal(x, y))
    tol = 1e-4 if x.dtype == np.float32 or loose else 1e-9
    return bool(np.allclose(x, y, rtol=tol, atol=tol, equal_nan=True))
