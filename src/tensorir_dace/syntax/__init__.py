"""The text syntax of Tensor IR: ``parse`` text into IR, ``format`` IR as text.

``parse(format(p)) == p`` for every program ``p``, in both the Unicode
(default) and the ASCII (``format(p, ascii=True)``) spelling.
"""

from .parser import parse, parse_expr, parse_type
from .printer import format

__all__ = ["parse", "parse_expr", "parse_type", "format"]
