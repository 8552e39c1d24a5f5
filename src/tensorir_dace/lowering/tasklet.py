"""Builds the C++ code of one tasklet and the memlets it needs.

Reads at coordinates that are affine in the map parameters become scalar
connectors with precise memlets (a Cartesian shift is a memlet offset).
Reads whose coordinates are only known at run time (neighbour tables), and
every read inside a guarded block (which must not happen when the guard is
false), go through a pointer to the whole array.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from .values import CPP_TYPES, ArrayInfo, Idx, ccode


@dataclass
class Connector:
    data: str
    subset: str
    pointer: bool


class TaskletBuilder:
    def __init__(self, pointer_only: bool = False):
        self.pointer_only = pointer_only
        self.inputs: dict[str, Connector] = {}
        self.lines: list[str] = []
        self.indent = 0
        self.guard_depth = 0
        self._counter = 0
        self._scalar_conns: dict[tuple[str, str], str] = {}
        self._pointer_conns: dict[str, str] = {}
        self.memo: list[dict] = [{}]

    # ---------------------------------------------------------------- code

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def fresh(self, base: str = "v") -> str:
        self._counter += 1
        return f"_{base}{self._counter}"

    def var(self, dtype: str, expr: str, base: str = "v") -> str:
        name = self.fresh(base)
        self.emit(f"{CPP_TYPES[dtype]} {name} = {expr};")
        return name

    def declare(self, dtype: str, base: str = "v") -> str:
        name = self.fresh(base)
        self.emit(f"{CPP_TYPES[dtype]} {name};")
        return name

    @contextmanager
    def block(self, header: str, guarded: bool = True):
        """``header { … }``; reads inside a guarded block go through pointers."""
        self.emit(header + " {")
        self.indent += 1
        self.guard_depth += guarded
        self.memo.append({})
        try:
            yield
        finally:
            self.memo.pop()
            self.guard_depth -= guarded
            self.indent -= 1
            self.emit("}")

    def remember(self, key, value) -> None:
        self.memo[-1][key] = value

    def recall(self, key):
        for table in reversed(self.memo):
            if key in table:
                return table[key]
        return None

    @property
    def code(self) -> str:
        return "\n".join(self.lines)

    # ---------------------------------------------------------------- reads

    def read(self, arr: ArrayInfo, coords: list[Idx]) -> str:
        if not arr.dims:
            return self.scalar(arr.data)
        if (not self.pointer_only and self.guard_depth == 0
                and all(c.affine is not None for c in coords)):
            subset = ", ".join(str(c.affine) for c in coords)
            key = (arr.data, subset)
            if key not in self._scalar_conns:
                conn = self._fresh_connector(
                    f"_in_{arr.data.lstrip('_')}_{len(self._scalar_conns)}")
                self._scalar_conns[key] = conn
                self.inputs[conn] = Connector(arr.data, subset, False)
            return self._scalar_conns[key]
        ptr = self.pointer(arr)
        return f"{ptr}[{self.flat_index(arr, coords)}]"

    def pointer(self, arr: ArrayInfo) -> str:
        if arr.data not in self._pointer_conns:
            conn = self._fresh_connector(f"_p_{arr.data.lstrip('_')}")
            self._pointer_conns[arr.data] = conn
            self.inputs[conn] = Connector(arr.data, arr.full_subset(), True)
        return self._pointer_conns[arr.data]

    def scalar(self, data: str) -> str:
        key = (data, "0")
        if key not in self._scalar_conns:
            conn = self._fresh_connector(f"_in_{data.lstrip('_')}")
            self._scalar_conns[key] = conn
            self.inputs[conn] = Connector(data, "0", False)
        return self._scalar_conns[key]

    def _fresh_connector(self, name: str) -> str:
        """``name``, or with a suffix where another array took it (``t`` and a
        transient ``_t`` both strip to ``t``)."""
        conn, k = name, 1
        while conn in self.inputs:
            conn, k = f"{name}_{k}", k + 1
        return conn

    @staticmethod
    def flat_index(arr: ArrayInfo, coords: list[Idx], base: list | None = None) -> str:
        """Row-major offset of ``coords`` from ``base`` (default: the array start)."""
        terms = []
        for i, (d, c, stride) in enumerate(zip(arr.dims, coords, arr.strides)):
            start = base[i] if base is not None else d.start
            if c.affine is not None:
                off = ccode(c.affine - start)
            else:
                off = f"({c.code} - {ccode(start)})"
            if off in ("0", "(0)"):
                continue
            terms.append(off if stride == 1 else f"{off} * {ccode(stride)}")
        return " + ".join(terms) if terms else "0"
