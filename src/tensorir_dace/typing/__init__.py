"""Type inference and checking (see :mod:`.checker`)."""

from .checker import check

__all__ = ["check"]
