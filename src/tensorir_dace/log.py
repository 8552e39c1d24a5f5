"""Progress of compiling: one INFO record per stage, with its time.

Every stage (checking, lowering, each optimisation pass, code generation,
the C++ build, loading) is timed by :func:`stage` and logged on the
``tensorir_dace`` logger.  Library users see nothing unless they configure
logging or set ``TENSORIR_DACE_LOG=info`` (any level name works); the
command line shows the records, with a live line during long C++ builds.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

logger = logging.getLogger("tensorir_dace")

#: Called with ``(stage, seconds so far)`` about every 0.5 s while a long stage
#: (the C++ build) runs; the command line sets it to draw its progress line.
_ticker: Callable[[str, float], None] | None = None
_TICK_S = 0.5


def configure_from_env() -> None:
    """Honour ``TENSORIR_DACE_LOG=<level>`` (``info``, ``debug``, …): log to stderr."""
    level = os.environ.get("TENSORIR_DACE_LOG", "").strip().upper()
    if not level or logger.handlers:
        return
    if not isinstance(logging.getLevelName(level), int):
        level = "INFO"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("tensorir_dace: %(message)s"))
    logger.addHandler(handler)
    logger.setLevel(level)


def set_ticker(fn: Callable[[str, float], None] | None) -> None:
    """Install (or remove, with ``None``) the callback for live progress of long stages."""
    global _ticker
    _ticker = fn


@contextmanager
def stage(name: str, *, live: bool = False) -> Iterator[None]:
    """Time the stage ``name`` and log ``"<name>: <seconds> s"`` at INFO when it ends.

    ``live=True`` (long stages) calls the installed ticker while it runs."""
    t0 = time.perf_counter()
    done = threading.Event()
    thread = None
    if live and _ticker is not None:
        ticker = _ticker

        def tick() -> None:
            while not done.wait(_TICK_S):
                ticker(name, time.perf_counter() - t0)
        thread = threading.Thread(target=tick, daemon=True)
        thread.start()
    try:
        yield
    finally:
        done.set()
        if thread is not None:
            thread.join()
        logger.info("%s: %.2f s", name, time.perf_counter() - t0)


def info(message: str, *args: object) -> None:
    logger.info(message, *args)
