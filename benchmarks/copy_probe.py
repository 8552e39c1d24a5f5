"""The copy probe: an OpenMP ``b[i] = a[i]`` loop, the memory-bandwidth reference.

Built with the flags DaCe builds programs with (its release flags, its CPU
arguments, OpenMP) plus ``-fno-tree-loop-distribute-patterns``, so that the
loop stays a loop instead of becoming a ``memcpy`` call.  Two variants: regular
stores, and streaming (non-temporal) stores with an alignment-peeling
prologue to a cache line and ``_mm_sfence()`` (AVX-512 or AVX2, chosen when compiled; regular
stores otherwise).  Effective bandwidth counts the bytes read and written.
"""

from __future__ import annotations

import ctypes
import hashlib
import pathlib
import shlex
import subprocess
import tempfile

import numpy as np

SOURCE = r"""
#include <immintrin.h>
#include <stdint.h>
extern "C" void copy_regular(const double* __restrict__ a, double* __restrict__ b, long long n) {
    #pragma omp parallel for schedule(static)
    for (long long i = 0; i < n; ++i) b[i] = a[i];
}
extern "C" void copy_streaming(const double* __restrict__ a, double* __restrict__ b, long long n) {
    #pragma omp parallel
    {
        #pragma omp for schedule(static)
        for (long long c = 0; c < n; c += 4096) {
            long long i = c, end = c + 4096 < n ? c + 4096 : n;
#if defined(__AVX512F__)
            for (; i < end && ((uintptr_t)(b + i) & 63); ++i) b[i] = a[i];
            for (; i + 8 <= end; i += 8) _mm512_stream_pd(b + i, _mm512_loadu_pd(a + i));
#elif defined(__AVX__)
            for (; i < end && ((uintptr_t)(b + i) & 63); ++i) b[i] = a[i];
            for (; i + 8 <= end; i += 8) {
                _mm256_stream_pd(b + i, _mm256_loadu_pd(a + i));
                _mm256_stream_pd(b + i + 4, _mm256_loadu_pd(a + i + 4));
            }
#endif
            for (; i < end; ++i) b[i] = a[i];
        }
    }
    _mm_sfence();
}
"""


def flags() -> list[str]:
    """DaCe's C++ flags for a release build, plus the probe's own."""
    import dace
    from dace.codegen import compiler
    release = compiler.BUILD_TYPE_FLAGS_BY_FAMILY["gnu"]["Release"] \
        if hasattr(compiler, "BUILD_TYPE_FLAGS_BY_FAMILY") else ["-O3", "-DNDEBUG"]
    return (list(release) + shlex.split(dace.Config.get("compiler", "cpu", "args"))
            + ["-fPIC", "-fopenmp", "-shared", "-fno-tree-loop-distribute-patterns"])


def build() -> ctypes.CDLL:
    cmd = ["g++", *flags()]
    key = hashlib.sha256((SOURCE + " ".join(cmd)).encode()).hexdigest()[:16]
    folder = pathlib.Path(tempfile.gettempdir()) / f"tensorir_dace_copy_probe_{key}"
    lib = folder / "probe.so"
    if not lib.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "probe.cpp").write_text(SOURCE)
        subprocess.run([*cmd, "probe.cpp", "-o", "probe.so"], cwd=folder, check=True)
    dll = ctypes.CDLL(str(lib))
    for fn in (dll.copy_regular, dll.copy_streaming):
        fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_longlong]
        fn.restype = None
    return dll


class CopyProbe:
    """Both copy variants over arrays of ``n`` doubles (NumPy-allocated, like the
    arrays of the benchmarks)."""

    def __init__(self, n: int):
        self.dll = build()
        self.a = np.random.rand(n)
        self.b = np.empty_like(self.a)
        self.bytes = 2 * self.a.nbytes

    def regular(self) -> None:
        self.dll.copy_regular(self.a.ctypes.data, self.b.ctypes.data, self.a.size)

    def streaming(self) -> None:
        self.dll.copy_streaming(self.a.ctypes.data, self.b.ctypes.data, self.a.size)
