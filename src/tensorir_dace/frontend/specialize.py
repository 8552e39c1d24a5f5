"""Rank-generic programs and functions: specialisation at call time.

A parameter of a ``@program`` or ``@function`` without an annotation, with a
bare ``Tensor`` annotation or with ``Tensor[T, ...]`` is *rank-generic*.  At
call time it takes, from its argument,

* the dimensions: from :func:`~tensorir_dace.frontend.with_dims`, from the
  keywords of :func:`~tensorir_dace.frontend.with_interval` (in axis order), or
  positionally — ``D0, D1, …`` for a plain array, or the names set with
  :class:`default_dims`;
* the intervals (halos): element 0 is coordinate 0 unless ``with_interval`` /
  ``with_dims(a, I[-1:])`` says otherwise; the stop is expressed relative to
  the size symbol ``N_<D>`` of the dimension, so that ``I[-1:N_I+1]`` and
  ``I[0:N_I]`` are different specialisations but ``N_I`` itself is not part of
  the key: one compiled binary serves every size;
* the element type: the array's dtype, or for a scalar the Python/NumPy type
  (``float`` → float64, ``int`` → int64, ``bool`` → bool, ``np.float32(…)`` →
  float32);
* other hashable Python values (dimensions, functions, strings, tuples of
  numbers) are *static*: they are part of the key, like JAX's static arguments.

``N_<D>`` is the size of the first plain (no explicit interval) array over
``D``, in parameter order; every other plain array over ``D`` must have that
size; an array with an explicit interval may differ by its halo.  A dimension
that annotated parameters also use takes ``N_<D>`` from them.

Each specialisation is translated, type-checked and compiled once, cached on
the decorated object (``prog.specializations()``, ``prog.cache_info()``) and,
through the content-addressed compile cache, on disk.  A new specialisation is
logged at INFO level on the logger ``tensorir_dace.specialization`` with the
reason: what differs from the closest cached specialisation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from .. import ir
from ..errors import ArgumentError, SourceLoc
from ..ir import Param, Program
from ..lazy import lazy_module
from .annotations import GenericSpec, TensorSpec
from .dims import DefinitionError, Dimension, NeighborDimension

if TYPE_CHECKING:
    import sympy
else:
    sympy = lazy_module("sympy")

logger = logging.getLogger("tensorir_dace.specialization")

__all__ = [
    "CacheInfo",
    "ParamSig",
    "Specialization",
    "default_dims",
    "get_default_dims",
    "logger",
]

# --------------------------------------------------------------------------- default dims

_DEFAULT_DIMS: tuple[Dimension, ...] | None = None
_POSITIONAL: dict[int, Dimension] = {}


class default_dims:
    """The dimensions of plain (unnamed) array arguments, by axis.

    ``tir.default_dims(I, J, K)`` makes axis 0 of every plain array argument
    ``I``, axis 1 ``J`` and axis 2 ``K`` (for this process); used in a
    ``with`` statement, the previous setting comes back at the end of the
    block.  ``default_dims()`` goes back to the positional names ``D0, D1, …``.
    Arrays passed with :func:`with_dims` / :func:`with_interval` are not
    affected.
    """

    def __init__(self, *dims: Dimension | str):
        global _DEFAULT_DIMS
        norm: list[Dimension] = []
        for d in dims:
            if isinstance(d, str):
                d = Dimension(d)
            if not isinstance(d, Dimension):
                raise DefinitionError(f"default_dims(I, J, …): {d!r} is not a dimension "
                                      "(neighbour dimensions must be named with with_dims)")
            if any(e.name == d.name for e in norm):
                raise DefinitionError(f"default_dims: dimension {d.name} appears twice")
            norm.append(d)
        self.dims: tuple[Dimension, ...] | None = tuple(norm) or None
        self._previous = _DEFAULT_DIMS
        _DEFAULT_DIMS = self.dims

    def __enter__(self) -> default_dims:
        return self

    def __exit__(self, *exc: object) -> None:
        global _DEFAULT_DIMS
        _DEFAULT_DIMS = self._previous

    def __repr__(self) -> str:
        names = ", ".join(d.name for d in self.dims) if self.dims else ""
        return f"default_dims({names})"


def get_default_dims() -> tuple[Dimension, ...] | None:
    """The dimensions set with :class:`default_dims` (None: positional ``D0, D1, …``)."""
    return _DEFAULT_DIMS


def positional_dims(ndim: int) -> tuple[tuple[Dimension, ...], bool]:
    """The dimensions of a plain ``ndim``-D array and whether they are the automatic
    positional names ``D0, D1, …``."""
    dd = _DEFAULT_DIMS
    if dd is not None:
        if ndim > len(dd):
            raise ValueError(f"default_dims({', '.join(d.name for d in dd)}) names "
                             f"{len(dd)} axes")
        return dd[:ndim], False
    out = []
    for k in range(ndim):
        d = _POSITIONAL.get(k)
        if d is None:
            d = _POSITIONAL.setdefault(k, Dimension(f"D{k}"))
        out.append(d)
    return tuple(out), True


# --------------------------------------------------------------------------- keys


NO_DEFAULT = object()


@dataclass(frozen=True)
class ParamInfo:
    """A parameter of a decorated function, as declared."""

    name: str
    spec: TensorSpec | GenericSpec
    loc: SourceLoc
    default: Any = NO_DEFAULT

    @property
    def generic(self) -> bool:
        return isinstance(self.spec, GenericSpec)


def _static_text(v: Any) -> str:
    if isinstance(v, (Dimension, NeighborDimension)):
        return v.name if isinstance(v, Dimension) else repr(v)
    name = getattr(v, "__qualname__", None) or getattr(getattr(v, "fn", None),
                                                        "__qualname__", None)
    if name is not None and callable(v):
        return name
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


@dataclass(frozen=True)
class ParamSig:
    """One parameter in the key of a specialisation.

    ``kind`` is ``"tensor"`` (``type`` holds its type, sizes symbolic),
    ``"scalar"`` (``type`` is ``tensor<T>``), ``"static"`` (``static`` holds the
    Python value) or ``"default"`` (not passed; the function's default is used).
    """

    name: str
    kind: str
    type: ir.TensorType | None = None
    static: Any = None

    def __str__(self) -> str:
        if self.kind == "tensor":
            return f"{self.name}: {self.type}"
        if self.kind == "scalar":
            assert self.type is not None
            return f"{self.name}: {self.type.dtype}"
        if self.kind == "static":
            return f"{self.name}={_static_text(self.static)}"
        return f"{self.name}=<default>"

    def what(self) -> str:
        if self.kind == "tensor":
            return f"a tensor {self.type}"
        if self.kind == "scalar":
            assert self.type is not None
            return f"a {self.type.dtype} scalar"
        if self.kind == "static":
            return f"the static value {_static_text(self.static)}"
        return "not given (its default)"


def key_text(key: Sequence[ParamSig]) -> str:
    return ", ".join(str(s) for s in key)


def _names(t: ir.TensorType) -> str:
    return "(" + ", ".join(t.dim_names) + ")"


def _difference(new: ParamSig, old: ParamSig) -> list[str]:
    """What differs between two keys of one parameter: one phrase per aspect."""
    if new.kind != old.kind:
        return [f"is {new.what()} (cached: {old.what()})"]
    if new.kind == "static":
        return [f"is {_static_text(new.static)} (cached: {_static_text(old.static)})"]
    a, b = new.type, old.type
    assert a is not None and b is not None
    parts = []
    if a.dtype != b.dtype:
        parts.append(f"has dtype {a.dtype} (cached: {b.dtype})")
    if a.dim_names != b.dim_names:
        if len(a.dims) != len(b.dims):
            parts.append(f"has {len(a.dims)} dimensions {_names(a)} (cached: {len(b.dims)} "
                         f"{_names(b)})")
        else:
            parts.append(f"has dimensions {_names(a)} (cached: {_names(b)})")
    elif a.dims != b.dims:
        changed = [(da, db) for da, db in zip(a.dims, b.dims) if da != db]
        parts.append("has a different halo: " + ", ".join(str(da) for da, _ in changed)
                     + " (cached: " + ", ".join(str(db) for _, db in changed) + ")")
    return parts or ["differs"]


def describe_difference(new: ParamSig, old: ParamSig) -> str:
    """Why ``new`` is not ``old``, for the log: one phrase."""
    parts = _difference(new, old)
    what = "static argument" if new.kind == old.kind == "static" else "argument"
    return f"{what} '{new.name}' " + " and ".join(parts)


def differences(new: Sequence[ParamSig], old: Sequence[ParamSig]) -> list[str]:
    return [describe_difference(a, b) for a, b in zip(new, old) if a != b]


def _distance(new: ParamSig, old: ParamSig) -> int:
    """How far apart two keys of one parameter are: a halo or a static value
    is closer than a dtype, a dtype closer than other dimensions, those closer
    than another rank or kind."""
    if new == old:
        return 0
    if new.kind != old.kind:
        return 8
    if new.type is None or old.type is None:
        return 1
    a, b = new.type, old.type
    d = 2 if a.dtype != b.dtype else 0
    if a.dim_names != b.dim_names:
        d += 4 if len(a.dims) != len(b.dims) else 3
    elif a.dims != b.dims:
        d += 1
    return d or 1


def distance(new: Sequence[ParamSig], old: Sequence[ParamSig]) -> int:
    """How far apart two keys are (the sum over their parameters, see
    :func:`_distance`); the closest cached key explains a recompile."""
    return sum(_distance(a, b) for a, b in zip(new, old))


# --------------------------------------------------------------------------- entries


class CacheInfo(NamedTuple):
    """Counters of one decorated object's specialisation cache.

    ``hits``/``misses``: calls (and ``.ir``/``specialize`` look-ups) that found /
    did not find their specialisation; ``specializations``: how many exist;
    ``compiles``: how many of them ran the C++ compiler; ``loads``: how many
    were loaded from the on-disk compile cache instead.
    """

    hits: int
    misses: int
    specializations: int
    compiles: int
    loads: int


@dataclass(eq=False)
class Specialization:
    """One specialisation: its key, its (checked) Tensor IR program and, once
    compiled, the compiled program.  For a ``@function`` called directly,
    ``result`` is the parameter that receives the value."""

    owner: str
    key: tuple[ParamSig, ...]
    program: ir.Program
    result: ir.Param | None = None
    dropped: dict[str, SourceLoc] = field(default_factory=dict)
    # parameters whose IR name is not their Python name: {Python name: IR name}
    names: dict[str, str] = field(default_factory=dict)
    compiled: Any = None
    calls: int = 0
    _extent_fns: Any = None
    _result_syms: set[str] | None = None
    # the source-extent parameters (see ..source_extents.extents_of), found once
    _source_extents: dict[str, list[Any]] | None = None

    @property
    def ir(self) -> Program:
        return self.program

    @property
    def input_params(self) -> tuple[Param, ...]:   # (``ir`` is the property above)
        if self.result is None:
            return self.program.params
        return tuple(p for p in self.program.params if p.name != self.result.name)

    def ir_values(self, values: dict[str, Any]) -> dict[str, Any]:
        """Arguments by Python name as the program takes them: by IR name, with
        the extents of the neighbour tables' source dimensions that no argument
        gives (see :func:`~tensorir_dace.source_extents.extent_values`)."""
        from ..source_extents import extent_values, extents_of
        if self.names:
            values = {self.names.get(k, k): v for k, v in values.items()}
        if self._source_extents is None:
            self._source_extents = extents_of(self.program.params)
        return extent_values(self._source_extents, values) if self._source_extents else values

    def signature(self) -> str:
        text = key_text(self.key)
        if self.result is not None:
            text += f" -> {self.result.type}"
        return text

    def __str__(self) -> str:
        return self.signature()

    def __repr__(self) -> str:
        return f"<specialisation of {self.owner}: {self.signature()}>"

    def format(self, ascii: bool = False) -> str:
        from ..syntax import format as fmt
        return fmt(self.program, ascii=ascii)

    def to_sdfg(self, optimize: str = "none"):
        """The DaCe SDFG of this specialisation."""
        from ..lowering import to_sdfg
        return to_sdfg(self.program, optimize=optimize)

    def view(self, path: Any = None, open: bool = False) -> Any:
        """Write the viewer page of this specialisation (see :func:`tensorir_dace.view`)."""
        from ..viewer import view
        return view(self.program, path, open=open)

    def result_symbols(self) -> set[str]:
        """The names of the size symbols in the result's type."""
        if self._result_syms is None:
            assert self.result is not None
            self._result_syms = {s.name for d in self.result.type.dims
                                 for s in (d.start - d.stop).free_symbols}
        return self._result_syms

    def result_shape(self, symbols: dict[str, int]) -> tuple[int, ...]:
        """The shape of the result array, from the size symbols' values."""
        assert self.result is not None
        if self._extent_fns is None:
            fns = []
            for d in self.result.type.dims:
                ext = sympy.expand(d.stop - d.start)
                names = sorted(s.name for s in ext.free_symbols)
                plain = ext.xreplace({s: sympy.Symbol(s.name) for s in ext.free_symbols})
                fn = sympy.lambdify([sympy.Symbol(n) for n in names], plain, modules=["math"])
                fns.append((names, fn))
            self._extent_fns = fns
        shape = []
        for names, fn in self._extent_fns:
            try:
                value = fn(*(symbols[n] for n in names))
            except KeyError as e:  # a dimension only the declared result has
                raise ArgumentError(f"{self.owner}(): the size {e} of the result is not "
                                    "determined by the arguments; pass out=, the array to "
                                    "write") from None
            shape.append(max(int(value), 0))
        return tuple(shape)


class SpecializationCache:
    """The specialisations of one decorated object, by key."""

    def __init__(self, owner: str):
        self.owner = owner
        self._by_key: dict[tuple[ParamSig, ...], Specialization] = {}
        self._by_raw: dict[Any, Specialization] = {}
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0
        self.compiles = 0
        self.loads = 0
        self.by_source = 0    # found in the compile cache by the Python source, untranslated

    def __len__(self) -> int:
        return len(self._by_key)

    def entries(self) -> list[Specialization]:
        return list(self._by_key.values())

    def clear(self) -> None:
        with self._lock:
            self._by_key.clear()
            self._by_raw.clear()
            self.hits = self.misses = self.compiles = self.loads = self.by_source = 0

    def info(self) -> CacheInfo:
        return CacheInfo(self.hits, self.misses, len(self._by_key) + self.by_source,
                         self.compiles, self.loads)

    def lookup(self, raw: Any, make_key: Callable[[], tuple[ParamSig, ...]],
               make: Callable[[tuple[ParamSig, ...]], Specialization], verb: str,
               validate: Callable[[Specialization], None] | None = None) -> Specialization:
        """The specialisation for a call; ``raw`` is a cheap key of the call's
        argument description (``make_key`` builds the real key from it)."""
        hit = self._by_raw.get(raw)
        if hit is not None:
            if validate is not None:
                validate(hit)
            self.hits += 1
            return hit
        with self._lock:
            key = make_key()
            spec = self._by_key.get(key)
            if spec is not None:
                if validate is not None:
                    validate(spec)
                self.hits += 1
            else:
                reason, closest = self._explain(key)
                spec = make(key)
                if validate is not None:
                    validate(spec)
                self.misses += 1
                self._by_key[key] = spec
                self._log_new(verb, spec, reason, closest)
            self._by_raw[raw] = spec
            return spec

    def explain(self, key: tuple[ParamSig, ...]) -> str:
        """Why ``key`` needs a new specialisation (see :meth:`_explain`)."""
        return self._explain(key)[0]

    def _explain(self, key: tuple[ParamSig, ...]) -> tuple[str, Specialization | None]:
        """Why ``key`` needs a new specialisation: the differences from the closest
        cached one (fewest differing aspects; the most recent among equals)."""
        best: tuple[int, tuple[ParamSig, ...]] | None = None
        for other in reversed(list(self._by_key)):
            if [s.name for s in other] != [s.name for s in key]:
                continue
            d = distance(key, other)
            if best is None or d < best[0]:
                best = (d, other)
        if best is None:
            return f"nothing cached yet ({key_text(key) or 'no parameters'})", None
        return "; ".join(differences(key, best[1])), self._by_key[best[1]]

    def _log_new(self, verb: str, spec: Specialization, reason: str,
                 closest: Specialization | None) -> None:
        if not logger.isEnabledFor(logging.INFO):
            return
        msg = f"{verb} {self.owner} for a new specialisation: {reason}"
        # shifts that became no-ops: said once, and again when that changes
        if spec.dropped and (closest is None or set(closest.dropped) != set(spec.dropped)):
            names = sorted(spec.dropped)
            msg += (f"; shifts along {', '.join(names)} are no-ops (no argument has "
                    f"{'this dimension' if len(names) == 1 else 'these dimensions'})")
        logger.info(msg)
        logger.debug("specialisation %d of %s: %s", len(self._by_key), self.owner,
                     spec.signature())

    def compiled(self, spec: Specialization, compile_fn: Callable[[ir.Program], Any],
                 translated_before: bool = False) -> Any:
        """The compiled program of ``spec`` (compiled, or loaded from the on-disk
        cache, the first time)."""
        hit = spec.compiled
        if hit is not None:
            return hit
        with self._lock:
            if spec.compiled is not None:
                return spec.compiled
            from ..runtime.cachedir import cache_stats
            if translated_before:
                logger.info("compiling %s for a specialisation used before with the "
                            "interpreter: %s", self.owner, spec.signature())
            before = cache_stats()
            compiled = compile_fn(spec.program)
            after = cache_stats()
            built = int(after["compiled"] - before["compiled"])
            loaded = int(after["loaded"] - before["loaded"])
            self.compiles += built
            self.loads += loaded
            if built:
                logger.debug("%s: compiled (%.2f s)", self.owner,
                             after["compile_seconds"] - before["compile_seconds"])
            elif loaded:
                logger.debug("%s: loaded the compiled binary from the compile cache",
                             self.owner)
            spec.compiled = compiled
            return compiled
