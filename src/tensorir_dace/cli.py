"""The ``tensorir-dace`` command line: check, lower and run ``.tir`` programs.

    tensorir-dace check sdfg_examples/laplacian.tir
    tensorir-dace lower sdfg_examples/laplacian.tir -o lap.sdfg --optimize default
    tensorir-dace run sdfg_examples/nabla.tir --size N=1000
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

from .errors import TensorIRError


def _read(path: str):
    from . import syntax
    try:
        text = pathlib.Path(path).read_text()
    except OSError as e:
        raise TensorIRError(f"cannot read {path}: {e.strerror}") from None
    return syntax.parse(text, filename=path)


def _sizes(items: list[str]) -> dict[str, int]:
    sizes = {}
    for item in items:
        name, _, value = item.partition("=")
        if not value.strip().lstrip("-").isdigit():
            raise TensorIRError(f"--size expects NAME=INTEGER, got {item!r}")
        sizes[name.strip()] = int(value)
    return sizes


def cmd_check(args) -> int:
    from . import ir, syntax
    from .typing import check
    typed = check(_read(args.file))
    print(syntax.format(typed, ascii=args.ascii))
    for stmt in typed.body:
        if isinstance(stmt, ir.Assign) and stmt.value.type is not None:
            print(f"# {syntax.format(stmt.target)}: value {stmt.value.type}")
    return 0


def cmd_lower(args) -> int:
    from .lowering import to_sdfg
    sdfg = to_sdfg(_read(args.file), optimize=args.optimize)
    out = args.output or str(pathlib.Path(args.file).with_suffix(".sdfg"))
    sdfg.save(out)
    print(f"wrote {out} ({sum(1 for _ in sdfg.states())} states, "
          f"{len(sdfg.arrays)} containers)")
    return 0


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def cmd_run(args) -> int:
    from .interpreter import interpret
    from .runtime.program import compile
    from .testing import clone, max_difference, random_arguments
    program = _read(args.file)
    inputs = random_arguments(program, sizes=_sizes(args.size), seed=args.seed)
    t0 = time.perf_counter()
    compiled = compile(program, optimize=args.optimize)
    compile_s = time.perf_counter() - t0
    ref, out = clone(inputs), clone(inputs)
    interpret(program, **ref)
    compiled(**out)
    diff = max_difference(out, ref)
    t_interp = _median_time(lambda: interpret(program, **clone(inputs)), args.repeat)
    work = clone(inputs)
    t_comp = _median_time(lambda: compiled(**work), args.repeat)
    print(f"program     {program.name}")
    print(f"compile     {compile_s:.2f} s (cached builds load in milliseconds)")
    print(f"max |compiled - interpreted| = {diff:.3g}")
    print(f"interpreter {t_interp * 1e3:9.3f} ms (median of {args.repeat})")
    print(f"compiled    {t_comp * 1e3:9.3f} ms (median of {args.repeat}), "
          f"{t_interp / max(t_comp, 1e-12):.1f}x faster")
    return 0 if diff <= args.tolerance else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tensorir-dace", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("check", help="parse and type-check; print the typed program")
    p.add_argument("file")
    p.add_argument("--ascii", action="store_true", help="print with ASCII spellings")
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("lower", help="write the SDFG of a program")
    p.add_argument("file")
    p.add_argument("-o", "--output", help="output .sdfg path (default: FILE.sdfg)")
    p.add_argument("--optimize", default="none", choices=["none", "default"])
    p.set_defaults(fn=cmd_lower)
    p = sub.add_parser("run", help="run compiled and interpreted on random inputs; compare")
    p.add_argument("file")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N",
                   help="value of a size symbol (default 8)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--optimize", default="default", choices=["none", "default"])
    p.add_argument("--tolerance", type=float, default=1e-9)
    p.set_defaults(fn=cmd_run)
    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except TensorIRError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
