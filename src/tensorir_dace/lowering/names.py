"""Names in the SDFG: user names stay readable, but never clash with C++
keywords, C macros, DaCe internals or the names the lowering makes itself.

Names the lowering invents (transients, map parameters, connectors) start
with an underscore; user names that start with one get a ``u`` prefix, so
the two never meet.
"""

from __future__ import annotations

import keyword

CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not
not_eq nullptr operator or or_eq private protected public register reinterpret_cast requires
return short signed sizeof static static_assert static_cast struct switch template this
thread_local throw true try typedef typeid typename union unsigned using virtual void volatile
wchar_t while xor xor_eq restrict main NULL NAN INFINITY std dace int8_t int16_t int32_t
int64_t uint8_t uint16_t uint32_t uint64_t size_t abs min max sqrt exp log sin cos tan pow
floor ceil trunc fmod isnan isinf isfinite cbrt tgamma atan2
""".split())

# Macros of the C and C++ standard headers the generated code includes: a
# variable of that name would be replaced by the preprocessor.
C_MACROS = frozenset("""
EOF BUFSIZ FILENAME_MAX EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX EDOM ERANGE EILSEQ errno
HUGE_VAL HUGE_VALF HUGE_VALL FP_NAN FP_INFINITE FP_ZERO FP_SUBNORMAL FP_NORMAL M_E M_LOG2E
M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2 M_SQRT1_2 CHAR_BIT
CHAR_MIN CHAR_MAX SCHAR_MIN SCHAR_MAX UCHAR_MAX SHRT_MIN SHRT_MAX USHRT_MAX INT_MIN INT_MAX
UINT_MAX LONG_MIN LONG_MAX ULONG_MAX LLONG_MIN LLONG_MAX ULLONG_MAX DBL_MAX DBL_MIN DBL_EPSILON
DBL_DIG DBL_MANT_DIG DBL_MAX_EXP DBL_MIN_EXP FLT_MAX FLT_MIN FLT_EPSILON FLT_DIG FLT_RADIX
FLT_MANT_DIG LDBL_MAX LDBL_MIN LDBL_EPSILON INT8_MIN INT8_MAX INT16_MIN INT16_MAX INT32_MIN
INT32_MAX INT64_MIN INT64_MAX UINT8_MAX UINT16_MAX UINT32_MAX UINT64_MAX SIZE_MAX PTRDIFF_MAX
PTRDIFF_MIN offsetof stdin stdout stderr assert
""".split())

# Names DaCe uses in generated code or reserves for itself.
DACE_RESERVED = frozenset("""
state sdfg tasklet program handle __state __dace result output input i j k
""".split())


class Mangler:
    """Deterministic map from user names to SDFG-safe, unique names."""

    def __init__(self) -> None:
        self.used: set[str] = set()
        self.mapping: dict[str, str] = {}

    def user(self, name: str) -> str:
        """The SDFG name of a user-visible name (parameter, temporary, symbol)."""
        if name in self.mapping:
            return self.mapping[name]
        safe = self._unique(_safe(name))
        self.mapping[name] = safe
        return safe

    def leaf(self, name: str, path: tuple[int, ...]) -> str:
        """The SDFG name of element ``path`` of the tuple-typed ``name``: ``name_0_1``
        unless a user name (a temporary ``tmp_1`` beside a tuple ``tmp``) has it."""
        key = name + "/" + "_".join(map(str, path))      # never a user name
        if key not in self.mapping:
            self.mapping[key] = self._unique(_safe(name + "_" + "_".join(map(str, path))))
        return self.mapping[key]

    def fresh(self, base: str) -> str:
        """A new internal name (starts with an underscore).  Its counter
        follows an underscore (``_t_1``): tasklet code declares locals named
        ``_t1``, and DaCe writes a tasklet's outputs to arrays by name in the
        same C++ block, so an array must never be named like a local."""
        return self._unique("_" + base.lstrip("_"), "_")

    def _unique(self, name: str, separator: str = "") -> str:
        candidate, n = name, 0
        while candidate in self.used:
            n += 1
            candidate = f"{name}{separator}{n}"
        self.used.add(candidate)
        return candidate


def _safe(name: str) -> str:
    """``name`` changed, if need be, so as not to be a C++ or DaCe word."""
    if (name in CPP_KEYWORDS or name in C_MACROS or name in DACE_RESERVED
            or keyword.iskeyword(name)
            or name.startswith("_")):
        return "u" + name if name.startswith("_") else name + "_"
    return name


def map_param(dim: str) -> str:
    """The map parameter that iterates over coordinates of a dimension."""
    return "_i_" + dim.lstrip("_")
