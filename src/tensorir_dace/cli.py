"""The ``tensorir-dace`` command line: check, format, lower, view, run, time and
build ``.tir`` programs.

    tensorir-dace check sdfg_examples/laplacian.tir
    tensorir-dace fmt --check sdfg_examples/*.tir
    tensorir-dace lower sdfg_examples/laplacian.tir --optimize default
    tensorir-dace view sdfg_examples/nabla.tir
    tensorir-dace run sdfg_examples/nabla.tir --size N=1000 --threads 1
    tensorir-dace bench sdfg_examples/program_if.tir --size N=256,1024 --threads 1,2
    tensorir-dace build sdfg_examples/ my_stencils.py
"""

from __future__ import annotations

import argparse
import itertools
import logging
import pathlib
import sys
import time

from .errors import TensorIRError


def _read_text(path: str) -> str:
    try:
        return pathlib.Path(path).read_text()
    except OSError as e:
        raise TensorIRError(f"cannot read {path}: {e.strerror}") from None


def _read(path: str):
    from . import syntax
    return syntax.parse(_read_text(path), filename=path)


def _size_lists(program, items: list[str]) -> dict[str, list[int]]:
    """``NAME=V[,V…]`` items; every NAME must be a size symbol of ``program``."""
    from .testing import size_symbols
    symbols = size_symbols(program)
    sizes: dict[str, list[int]] = {}
    for item in items:
        name, _, value = item.partition("=")
        name = name.strip()
        values = [v.strip() for v in value.split(",")]
        if not name or not all(v.lstrip("-").isdigit() for v in values):
            raise TensorIRError(f"--size expects NAME=INTEGER (or NAME=N1,N2,…), got {item!r}")
        if name not in symbols:
            known = ", ".join(symbols) if symbols else "none: all its sizes are fixed"
            raise TensorIRError(f"--size {name}: '{name}' is not a size symbol of program "
                                f"'{program.name}'; its size symbols are {known}")
        sizes[name] = [int(v) for v in values]
    return sizes


def _sizes(program, items: list[str]) -> dict[str, int]:
    lists = _size_lists(program, items)
    for name, values in lists.items():
        if len(values) != 1:
            raise TensorIRError(f"--size {name}: give one value here, got {len(values)}")
    return {name: values[0] for name, values in lists.items()}


# --------------------------------------------------------------------------- check / fmt


def cmd_check(args) -> int:
    from . import ir
    from .syntax.printer import format_checked
    from .typing import check
    typed = check(_read(args.file))
    print(format_checked(typed, ascii=args.ascii))
    for stmt in typed.body:
        if isinstance(stmt, ir.Assign) and stmt.value.type is not None:
            print(f"# {format_checked(stmt.target)}: value {stmt.value.type}")
    return 0


def cmd_fmt(args) -> int:
    from .syntax.fmt import format_source
    status = 0
    for path in args.files:
        text = _read_text(path)
        canonical = format_source(text, filename=path, ascii=args.ascii)
        if args.check:
            if canonical != text:
                print(f"{path}: not in canonical form (run: tensorir-dace fmt -w {path})")
                status = 1
        elif args.write:
            if canonical != text:
                pathlib.Path(path).write_text(canonical)
                print(f"formatted {path}")
        else:
            sys.stdout.write(canonical)
    return status


# --------------------------------------------------------------------------- lower / view


def _stage_of(args) -> str:
    if args.stage is not None and args.optimize is not None:
        raise TensorIRError("give --stage or --optimize, not both "
                            "(--optimize default is --stage optimized)")
    if args.stage is not None:
        return args.stage
    return {None: "lowered", "none": "lowered", "default": "optimized"}[args.optimize]


def default_sdfg_path(tir: pathlib.Path, stage: str, expand: bool) -> pathlib.Path:
    """``NAME.sdfg`` (lowered), ``NAME.optimized.sdfg``, ``NAME.<stage>.sdfg``;
    ``.expanded`` before ``.sdfg`` for the copy with library nodes expanded."""
    suffix = "" if stage == "lowered" else f".{stage}"
    if expand:
        suffix += ".expanded"
    return tir.with_name(tir.stem + suffix + ".sdfg")


def cmd_lower(args) -> int:
    from .lowering.files import expanded, save
    from .lowering.stages import sdfg_stages
    stage = _stage_of(args)
    program = _read(args.file)
    sdfg = sdfg_stages(program, [stage])[stage]
    if args.expand:
        sdfg = expanded(sdfg)
    out = pathlib.Path(args.output) if args.output else \
        default_sdfg_path(pathlib.Path(args.file), stage, args.expand)
    save(sdfg, out)
    print(f"wrote {out} ({stage}{', library nodes expanded' if args.expand else ''}: "
          f"{sum(1 for _ in sdfg.states())} states, {len(sdfg.arrays)} containers)")
    return 0


def cmd_view(args) -> int:
    from .viewer import view
    program = _read(args.file)
    out = args.output or str(pathlib.Path(args.file).with_suffix(".html"))
    view(program, out, open=args.open)        # prints the path
    return 0


# --------------------------------------------------------------------------- run / bench


def _median_time(fn, repeat: int, warmup: int = 0) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    times.sort()
    return times[len(times) // 2]


def cmd_run(args) -> int:
    from .interpreter import interpret
    from .openmp import get_num_threads, wait_policy
    from .runtime.program import compile
    from .testing import clone, max_difference, random_arguments
    program = _read(args.file)
    inputs = random_arguments(program, sizes=_sizes(program, args.size), seed=args.seed)
    if args.threads is not None:
        _set_threads(args.threads)
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
    print(f"threads     {get_num_threads()} OpenMP threads, wait policy {wait_policy()}; "
          "calls whose maps are all small run on one")
    print(f"compile     {compile_s:.2f} s (cached builds load in milliseconds)")
    print(f"max |compiled - interpreted| = {diff:.3g}")
    print(f"interpreter {t_interp * 1e3:9.3f} ms (median of {args.repeat})")
    print(f"compiled    {t_comp * 1e3:9.3f} ms (median of {args.repeat}), "
          f"{t_interp / max(t_comp, 1e-12):.1f}x faster")
    return 0 if diff <= args.tolerance else 1


def _set_threads(n: int) -> None:
    """OpenMP threads of the compiled code (same libgomp as DaCe's libraries)."""
    from .openmp import set_num_threads
    set_num_threads(n)


def cmd_build(args) -> int:
    from .build import build
    report = build(args.paths, optimize=args.optimize, jobs=args.jobs)
    for name, message in report.failed:
        print(f"error: {name}: {message}", file=sys.stderr)
    print(f"built {len(report.built)} programs in {report.seconds:.1f} s"
          + (f", skipped {len(report.skipped)}" if report.skipped else "")
          + (f", {len(report.failed)} failed" if report.failed else ""))
    return 0 if report.ok else 1


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected N or N1,N2,…, got {text!r}") from None
    if any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive counts, got {text!r}")
    return values


def cmd_bench(args) -> int:
    from .interpreter import interpret
    from .runtime.program import compile
    from .testing import clone, max_difference, random_arguments
    program = _read(args.file)
    lists = _size_lists(program, args.size)
    compiled = compile(program, optimize=args.optimize)
    names = list(lists)
    header = "".join(f"{n:>8}" for n in names)
    print(f"program {program.name}: steady state, median of {args.repeat} calls "
          f"after {args.warmup} warm-up calls")
    print(f"{header}{'threads':>8}{'compiled ms':>13}{'interp. ms':>12}{'speed-up':>10}")
    worst = 0.0
    if args.threads is None:
        from .openmp import get_num_threads
        args.threads = [get_num_threads()]
    for values in itertools.product(*lists.values()):
        sizes = dict(zip(names, values))
        inputs = random_arguments(program, sizes=sizes, seed=args.seed)
        ref, work = clone(inputs), clone(inputs)
        t_interp = None
        if not args.no_interpreter:
            t_interp = _median_time(lambda inputs=inputs: interpret(program, **clone(inputs)),
                                    max(1, args.repeat // 4))
            interpret(program, **ref)
        for threads in args.threads:
            _set_threads(threads)
            out = clone(inputs)
            compiled(**out)
            if t_interp is not None:
                worst = max(worst, max_difference(out, ref))
            t = _median_time(lambda work=work: compiled(**work), args.repeat, args.warmup)
            row = "".join(f"{v:>8}" for v in values)
            interp = f"{t_interp * 1e3:12.3f}" if t_interp is not None else f"{'-':>12}"
            speed = f"{t_interp / max(t, 1e-12):9.1f}x" if t_interp is not None else f"{'-':>10}"
            print(f"{row}{threads:>8}{t * 1e3:13.3f}{interp}{speed}")
    if not args.no_interpreter:
        print(f"max |compiled - interpreted| = {worst:.3g}")
    return 0 if worst <= args.tolerance else 1


# --------------------------------------------------------------------------- progress


class _Progress(logging.Handler):
    """Shows the compile stages on stderr; a live line during long C++ builds."""

    def __init__(self, stream) -> None:
        super().__init__(logging.INFO)
        self.stream = stream
        self.live = False

    def emit(self, record: logging.LogRecord) -> None:
        self.clear()
        self.stream.write(f"  {record.getMessage()}\n")
        self.stream.flush()

    def tick(self, stage: str, seconds: float) -> None:
        if seconds >= 1.0 and self.stream.isatty():
            self.stream.write(f"\r  {stage}: {seconds:.0f} s …")
            self.stream.flush()
            self.live = True

    def clear(self) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.live = False


def _show_progress(quiet: bool) -> None:
    from . import log
    for old in [h for h in log.logger.handlers if isinstance(h, _Progress)]:
        log.logger.removeHandler(old)
    log.set_ticker(None)
    if quiet or log.logger.handlers:      # quiet, or TENSORIR_DACE_LOG already shows them
        return
    handler = _Progress(sys.stderr)
    log.logger.addHandler(handler)
    log.logger.setLevel(logging.INFO)
    log.set_ticker(handler.tick)


# --------------------------------------------------------------------------- parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:  # pragma: no cover - run from a source tree
            return "not installed"
    return f"tensorir-dace {installed('tensorir_dace')} (DaCe {installed('dace')})"


def _stage_help() -> str:
    from .transforms.sdfg_passes import pass_names
    return ("pipeline stage to write: lowered, " + ", ".join(pass_names("default"))
            + ", optimized or gpu (the optimised SDFG for a CUDA GPU)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tensorir-dace", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=_version(),
                        help="print the versions of tensorir-dace and DaCe and exit")
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="do not show the compile stages and their times")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="do not show the compile stages and their times")

    p = sub.add_parser("check", parents=[common],
                       help="parse and type-check; print the typed program")
    p.add_argument("file", help="the .tir file")
    p.add_argument("--ascii", action="store_true", help="print with ASCII spellings")
    p.set_defaults(fn=cmd_check)

    p = sub.add_parser("fmt", parents=[common],
                       help="print or rewrite .tir files in canonical form "
                            "(comments are kept)")
    p.add_argument("files", nargs="+", metavar="FILE", help="the .tir files")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("-w", "--write", action="store_true",
                      help="rewrite the files in place instead of printing them")
    mode.add_argument("--check", action="store_true",
                      help="print nothing but the files not in canonical form; exit 1 if any")
    p.add_argument("--ascii", action="store_true", help="use ASCII spellings")
    p.set_defaults(fn=cmd_fmt)

    p = sub.add_parser("lower", parents=[common],
                       help="write the SDFG of a program (NAME.sdfg by default)")
    p.add_argument("file", help="the .tir file")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="output path (default: NAME.sdfg next to the .tir file; "
                        "NAME.optimized.sdfg with --optimize default, NAME.STAGE.sdfg "
                        "with --stage, .expanded before .sdfg with --expand)")
    p.add_argument("--optimize", choices=["none", "default"], default=None,
                   help="none: as lowered (the default); default: optimised, as compiled")
    p.add_argument("--stage", metavar="STAGE", help=_stage_help())
    p.add_argument("--expand", action="store_true",
                   help="expand the library nodes, for DaCe without this package")
    p.set_defaults(fn=cmd_lower)

    p = sub.add_parser("view", parents=[common],
                       help="write a self-contained HTML page with the SDFG of "
                                    "every pipeline stage and the Tensor IR")
    p.add_argument("file", help="the .tir file")
    p.add_argument("-o", "--output", metavar="PATH",
                   help="output path (default: NAME.html next to the .tir file)")
    p.add_argument("--open", action="store_true", help="open the page in the web browser")
    p.set_defaults(fn=cmd_view)

    size_help = "value of a size symbol (default 8); repeat for several symbols"
    p = sub.add_parser("run", parents=[common],
                       help="run compiled and interpreted on random inputs; compare")
    p.add_argument("file", help="the .tir file")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N", help=size_help)
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--repeat", type=int, default=5, help="timed calls (median reported)")
    p.add_argument("--optimize", default="default", choices=["none", "default"],
                   help="pipeline of the compiled program")
    p.add_argument("--tolerance", type=float, default=1e-9,
                   help="largest accepted difference from the interpreter (exit 1 above)")
    p.add_argument("--threads", type=int, default=None, metavar="N",
                   help="OpenMP threads of the compiled program (default: OMP_NUM_THREADS, "
                        "else every core)")
    p.set_defaults(fn=cmd_run)

    p = sub.add_parser("bench", parents=[common],
                       help="steady-state timing at chosen sizes and thread counts, "
                                     "against the interpreter")
    p.add_argument("file", help="the .tir file")
    p.add_argument("--size", action="append", default=[], metavar="NAME=N1,N2",
                   help="values of a size symbol (default 8); every combination is timed")
    p.add_argument("--threads", type=_int_list, default=None, metavar="T1,T2",
                   help="OpenMP thread counts to time (default: OMP_NUM_THREADS, else "
                        "every core)")
    p.add_argument("--repeat", type=int, default=20, help="timed calls (median reported)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls before timing")
    p.add_argument("--seed", type=int, default=0, help="seed of the random inputs")
    p.add_argument("--optimize", default="default", choices=["none", "default"],
                   help="pipeline of the compiled program")
    p.add_argument("--no-interpreter", action="store_true",
                   help="time only the compiled program (large sizes)")
    p.add_argument("--tolerance", type=float, default=1e-9,
                   help="largest accepted difference from the interpreter (exit 1 above)")
    p.set_defaults(fn=cmd_bench)

    p = sub.add_parser("build", parents=[common],
                       help="compile .tir files and the @programs of Python modules into the "
                            "compile cache, in parallel processes")
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=".tir files, Python modules or directories")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="programs compiled at once (default: one per core)")
    p.add_argument("--optimize", default="default", choices=["none", "default"],
                   help="pipeline of the compiled programs")
    p.set_defaults(fn=cmd_build)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _show_progress(args.quiet)
    try:
        return args.fn(args)
    except TensorIRError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
