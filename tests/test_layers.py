"""The package's layers, enforced: data flows one way through the stages.

Top to bottom: ``cli | frontend`` > ``runtime`` > ``interop`` > ``lowering`` >
``transforms | library`` > ``interpreter`` > ``typing`` >
``arguments | intervals | syntax`` > ``ir`` > ``errors``.  A module may import
modules of its own layer or of lower layers only, and no module imports
itself back through a chain of imports (no cycle, inside a package or across).
Every import counts, also one inside a function or under ``TYPE_CHECKING``.

Modules outside the stages:

* ``tensorir_dace/__init__.py`` and ``__main__.py`` are the entry points, above
  every layer (nothing inside the package imports the package root);
* ``testing.py`` (helpers for test suites), ``build.py`` (compiling many
  programs at once) and ``fuzz`` (random-program differential testing) sit
  with ``cli | frontend``;
* ``builders.py`` (constructing IR in Python) sits with ``syntax``, the other
  way to write IR;
* ``viewer`` (the HTML page of a program's pipeline stages) sits with
  ``runtime``: it lowers programs, and the front end and the CLI use it;
* ``log.py`` (stage timing), ``lazy.py`` (modules imported on first use) and
  ``tracebacks.py`` (short tracebacks at the
  API boundary) sit with ``errors``: every layer may use them;
* ``signature.py`` (a lowered program's calling convention, plain data made by
  the lowering and used by the runtime) sits with ``arguments``, so that the
  runtime can read it without importing the lowering;
* ``size_solving.py`` (size symbols solved from array shapes, for the
  argument binder) sits with ``arguments``;
* ``callchecks.py`` (call-time checks shared by the interpreter and the
  runtime) and ``device_arrays.py`` (GPU arrays seen through
  ``__cuda_array_interface__``, for those checks) sit with ``arguments``, and so
  does ``tablescan.py`` (table scans cached per buffer, shared with the cached
  programs' call path, which imports no SymPy), and ``staging.py`` (memory
  extents and C-contiguous copies of strided arrays, for the checks and both
  compiled call paths), and ``source_extents.py`` (the parameters that give
  a dimension only neighbour tables index its extent: bound by the argument
  binder, derived by the interop).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = "tensorir_dace"
ROOT = Path(__file__).resolve().parent.parent / "src" / PACKAGE

LAYERS: list[set[str]] = [          # top first
    {"__init__", "__main__"},
    {"cli", "frontend", "testing", "build", "fuzz"},
    {"runtime", "viewer"},
    {"interop"},
    {"lowering"},
    {"transforms", "library"},
    {"interpreter"},
    {"typing"},
    {"arguments", "callchecks", "device_arrays", "intervals", "openmp", "pointers", "syntax",
     "tablescan", "staging", "builders", "signature", "size_solving", "source_extents"},
    {"ir"},
    {"errors", "log", "tracebacks", "lazy"},
]
RANK = {name: len(LAYERS) - k for k, names in enumerate(LAYERS) for name in names}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def is_package(name: str) -> bool:
    return MODULES.get(name, Path()).name == "__init__.py"


def imports_of(name: str) -> set[str]:
    """The package's modules that ``name`` imports, anywhere in its source."""
    path = MODULES[name]
    package = name if is_package(name) else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            subs = [f"{target}.{a.name}" for a in node.names]
            sub_modules = [s for s in subs if s in MODULES]
            # ``from . import ir`` imports the module ir, not the package root
            found |= set(sub_modules) if sub_modules and len(sub_modules) == len(subs) \
                else {target} | set(sub_modules)
    return {m for m in found if m == PACKAGE or m.startswith(PACKAGE + ".")}


def layer(name: str) -> str:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


GRAPH = {name: imports_of(name) - {name} for name in MODULES}


def test_every_module_has_a_layer():
    unknown = sorted({layer(m) for m in MODULES} - set(RANK))
    assert not unknown, f"modules without a layer: {unknown}; add them to LAYERS"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_imports_follow_the_layers(name):
    upward = sorted(m for m in GRAPH[name] if m in MODULES and RANK[layer(m)] > RANK[layer(name)])
    assert not upward, f"{name} imports higher layers: {upward}"


def test_no_import_cycle():
    cycles = []
    state: dict[str, int] = {}          # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(m: str) -> None:
        state[m] = 1
        stack.append(m)
        for n in sorted(GRAPH[m]):
            if n not in MODULES:
                continue
            if state.get(n) == 1:
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n)
        stack.pop()
        state[m] = 2

    for m in sorted(MODULES):
        if m not in state:
            visit(m)
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_the_checks_see_function_level_imports():
    """The reader finds imports inside functions (a check that cannot fail is none)."""
    assert "tensorir_dace.lowering" in GRAPH["tensorir_dace.frontend.program_objects"]
