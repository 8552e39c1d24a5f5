"""NumPy helpers the ICON stencil tests share for their expected values.

Only NumPy lives here: each ICON test file declares its own dimensions and
offsets, since a local dimension keeps the first neighbour count it meets in
a process."""

from __future__ import annotations

import numpy as np


def check(got, expected, rtol, atol=0.0):
    """Every array of ``expected`` (by name) matches the one in ``got``."""
    for name, want in expected.items():
        np.testing.assert_allclose(got[name], want, rtol=rtol, atol=atol, err_msg=name)


def inside(value, base, hs, he, vs=None, ve=None):
    """``base`` with ``value`` written on rows ``hs:he`` (and levels ``vs:ve``)."""
    out = np.array(base)
    if vs is None:
        out[hs:he] = np.asarray(value)[hs:he]
    else:
        out[hs:he, vs:ve] = np.asarray(value)[hs:he, vs:ve]
    return out


def shifted(x, n):
    """``x(Koff[n])``: level k takes level k + n (NaN outside the column)."""
    out = np.full(x.shape, np.nan)
    lo, hi = max(0, -n), min(x.shape[1], x.shape[1] - n)
    out[:, lo:hi] = x[:, lo + n:hi + n]
    return out
