"""Type inference and checking.

``checker`` walks programs (statements, names, calls, lambdas); the typing
rules of the builtins live by family in ``elementwise``, ``domains``,
``shifts`` and ``loops``; ``intervals`` (one level up) does the interval
algebra on SymPy bounds.
"""

from .checker import check

__all__ = ["check"]
