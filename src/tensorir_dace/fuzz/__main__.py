"""``python -m tensorir_dace.fuzz``: run generated programs in parallel processes
and write every failure to ``--out``.  ``--front text`` (the default) fuzzes the
Tensor IR text front (failures shrunk to ``.tir`` files, plus mutated texts for
the parser); ``--front python`` the Python front (failures as runnable ``.py``
reproducers); ``--front gtx`` programs in GT4Py's spelling (icon4py style:
``@gtx.field_operator``s calling each other, ``@gtx.program`` with ``out=`` and
``domain=``, ``FieldOffset`` shifts over mesh tables with absent neighbours,
``concat_where``, ``scan_operator``s; a third of the cases also call their
field operators directly from Python with ``out=``, ``domain=`` and
``offset_provider=``), compared with a NumPy reference written beside each
field operator (failures as runnable ``.py`` reproducers);
``--front both`` runs the text and Python fronts, ``--front all`` the three."""

from __future__ import annotations

import argparse
import pathlib
import sys


def main(argv: list[str] | None = None) -> int:
    from .gtx_runner import run_gtx_front
    from .python_runner import run_python_front
    from .runner import run_text_front
    ap = argparse.ArgumentParser(prog="python -m tensorir_dace.fuzz", description=__doc__)
    ap.add_argument("--front", choices=("text", "python", "both", "gtx", "all"), default="text",
                    help="which front end's programs to generate")
    ap.add_argument("--programs", type=int, default=200, help="generated programs to run")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first program")
    ap.add_argument("--batch", type=int, default=20, help="programs per compiled program")
    ap.add_argument("--parser", type=int, default=1000,
                    help="mutated texts for the parser (text front)")
    ap.add_argument("--calls", type=int, default=10,
                    help="mutated calls per compiled program (wrong dtypes, shapes, "
                         "layouts, scalars, tables (in offset_provider= for gtx), aliases), each "
                         "through the compiled program and the interpreter")
    ap.add_argument("--stream-threshold", default="mix", metavar="BYTES|mix|default",
                    help="the streaming stores' size threshold to compile with "
                         "(TENSORIR_DACE_STREAMING_MIN_BYTES); 'mix' (the default) compiles "
                         "every other optimised batch with 0, so that the streamed branches "
                         "run on the small arrays, and the others with the default")
    ap.add_argument("--out", default="fuzz-failures", help="folder for the failures")
    ap.add_argument("--builtin-names", action="store_true",
                    help="Python front: name the parameters like Tensor IR builtins and size "
                         "symbols (index, pos, shift, N_I, …)")
    args = ap.parse_args(argv)
    if args.stream_threshold not in ("mix", "default") and \
            not args.stream_threshold.isdigit():
        ap.error(f"--stream-threshold: expected a number of bytes, 'mix' or 'default', "
                 f"not {args.stream_threshold!r}")
    out = pathlib.Path(args.out)
    failed = False
    if args.front in ("text", "both", "all"):
        summary, bad = run_text_front(args.programs, args.jobs, args.seed, args.batch,
                                      args.parser, out, args.calls, args.stream_threshold)
        print(summary, flush=True)
        failed |= bad
    if args.front in ("python", "both", "all"):
        summary, bad = run_python_front(args.programs, args.jobs, args.seed, args.batch, out,
                                        args.builtin_names, args.calls, args.stream_threshold)
        print(summary, flush=True)
        failed |= bad
    if args.front in ("gtx", "all"):
        summary, bad = run_gtx_front(args.programs, args.jobs, args.seed, args.batch, out,
                                     args.calls, args.stream_threshold)
        print(summary, flush=True)
        failed |= bad
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
