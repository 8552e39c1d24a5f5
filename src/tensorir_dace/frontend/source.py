"""Reading the source of decorated functions: AST and user file positions."""

from __future__ import annotations

import ast
import builtins
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ..errors import (
    FrontendError,
    SourceLoc,
)
from .size_exprs import as_sympy


@dataclass
class SourceInfo:
    """The parsed source of a Python function and how to map its positions."""

    fn: Any
    filename: str
    first_line: int
    col_offset: int
    node: ast.FunctionDef | ast.Lambda

    @property
    def name(self) -> str:
        return getattr(self.fn, "__name__", "<function>")

    def loc(self, node: ast.AST | None) -> SourceLoc:
        at: Any = node if node is not None and hasattr(node, "lineno") else self.node
        return SourceLoc(line=self.first_line + at.lineno - 1,
                         column=at.col_offset + 1 + self.col_offset, filename=self.filename)

    def lookup_global(self, name: str) -> tuple[bool, Any]:
        """A name from the function's closure, module globals or builtins."""
        fn = self.fn
        code = getattr(fn, "__code__", None)
        if code is not None and fn.__closure__:
            for var, cell in zip(code.co_freevars, fn.__closure__):
                if var == name:
                    try:
                        return True, as_sympy(cell.cell_contents)
                    except ValueError:
                        return False, None
        g = getattr(fn, "__globals__", {})
        if name in g:
            return True, as_sympy(g[name])
        if hasattr(builtins, name):
            return True, getattr(builtins, name)
        return False, None

    def global_names(self) -> set[str]:
        fn = self.fn
        names = set(getattr(fn, "__globals__", {}))
        code = getattr(fn, "__code__", None)
        if code is not None:
            names |= set(code.co_freevars)
        return names


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_frame() -> tuple[str, int] | None:
    """File and line of the innermost frame outside this package: where the user
    wrote a definition or made a call."""
    f: FrameType | None = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not os.path.abspath(fn).startswith(_PACKAGE) and not fn.startswith("<frozen"):
            return fn, f.f_lineno
        f = f.f_back
    return None


_SOURCES: dict[Any, SourceInfo] = {}


def source_info(fn: Any) -> SourceInfo:
    """Parse (once) the source of a Python function or lambda."""
    hit = _SOURCES.get(fn)
    if hit is not None:
        return hit
    name = getattr(fn, "__qualname__", repr(fn))
    try:
        lines, first = inspect.getsourcelines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise FrontendError(f"cannot read the source code of '{name}' ({e}); decorated "
                            "functions must be defined in a file") from None
    first = max(first, 1)
    indent = len(lines[0]) - len(lines[0].lstrip())
    text = "".join(line[indent:] if (indent == 0 or line[:indent].isspace())
                   else line.lstrip() for line in lines)
    try:
        tree = ast.parse(text)
    except SyntaxError:
        tree = None
    node: ast.FunctionDef | ast.Lambda | None = None
    if getattr(fn, "__name__", "") == "<lambda>":
        if tree is not None:
            code = fn.__code__
            argnames = list(code.co_varnames[:code.co_argcount])
            cands = [n for n in ast.walk(tree) if isinstance(n, ast.Lambda)
                     and [a.arg for a in n.args.args] == argnames]
            if len(cands) == 1:
                node = cands[0]
        if node is None:
            raise FrontendError(f"cannot find the source of the lambda at "
                                f"{filename}:{first} unambiguously; define the function "
                                "with def", SourceLoc(first, 1, filename))
    else:
        if tree is None or not tree.body or not isinstance(
                tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise FrontendError(f"cannot parse the source code of '{name}'",
                                SourceLoc(first, 1, filename))
        definition = tree.body[0]
        if not isinstance(definition, ast.FunctionDef):
            raise FrontendError("async functions are not supported",
                                SourceLoc(first, 1, filename))
        node = definition
    info = SourceInfo(fn, filename, first, indent, node)
    try:
        _SOURCES[fn] = info
    except TypeError:  # unhashable callables
        pass
    return info


def parameters(src: SourceInfo, fdef: Any, evaluate: Callable[[ast.expr], Any],
               from_signature: bool) -> tuple[list[str], dict[str, Any]]:
    """The parameter names of a def or lambda and its default values: read from
    the live function's signature (``from_signature``), or, for nested defs,
    ``evaluate``-d from the default expressions.  Lambdas have no defaults."""
    a = fdef.args
    if a.vararg or a.kwarg:
        raise FrontendError("*args and **kwargs parameters are not supported",
                            src.loc(fdef))
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    defaults: dict[str, Any] = {}
    if isinstance(fdef, ast.Lambda):
        if a.defaults or any(d is not None for d in a.kw_defaults):
            raise FrontendError("lambdas with default arguments are not supported; "
                                "write the lambda without defaults or use a def",
                                src.loc(fdef))
        return names, defaults
    fn = src.fn
    if fn is not None and not isinstance(fn, ast.AST) and from_signature:
        sig = inspect.signature(fn)
        for p in sig.parameters.values():
            if p.default is not inspect.Parameter.empty:
                defaults[p.name] = p.default
    else:
        pos = a.posonlyargs + a.args
        for arg, d in zip(pos[len(pos) - len(a.defaults):], a.defaults):
            defaults[arg.arg] = evaluate(d)
        for arg, kd in zip(a.kwonlyargs, a.kw_defaults):
            if kd is not None:
                defaults[arg.arg] = evaluate(kd)
    return names, defaults
