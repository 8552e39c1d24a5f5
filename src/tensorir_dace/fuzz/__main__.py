"""``python -m tensorir_dace.fuzz``: run generated programs in parallel processes,
shrink every failure and write it to ``--out``."""

from __future__ import annotations

import argparse
import multiprocessing
import pathlib
import sys
import time

from .generator import generate_case, program_text
from .runner import case_fails, fuzz_parser, run_batch, shrink


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tensorir_dace.fuzz", description=__doc__)
    ap.add_argument("--programs", type=int, default=200, help="generated programs to run")
    ap.add_argument("--jobs", type=int, default=1, help="parallel processes")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first program")
    ap.add_argument("--batch", type=int, default=20, help="programs per compiled program")
    ap.add_argument("--parser", type=int, default=1000, help="mutated texts for the parser")
    ap.add_argument("--out", default="fuzz-failures", help="folder for shrunk failures")
    args = ap.parse_args(argv)
    start = time.time()
    jobs = [(s, min(args.batch, args.seed + args.programs - s))
            for s in range(args.seed, args.seed + args.programs, args.batch)]
    with multiprocessing.get_context("spawn").Pool(args.jobs) as pool:
        results = pool.map(run_batch, jobs, chunksize=1)
    out = pathlib.Path(args.out)
    statements = sum(r[1] for r in results)
    failures = [(seed, why) for r in results for seed, why in r[2]]
    crashes = [(r[0], r[3]) for r in results if r[3]]
    for first, _ in crashes:     # pin a crash on its cases
        for k in range(args.batch):
            reason = case_fails(generate_case(first + k))
            if reason:
                failures.append((first + k, reason))
    for seed, _ in failures:
        small, reason = shrink(generate_case(seed), seed)
        out.mkdir(parents=True, exist_ok=True)
        (out / f"case_{seed}.tir").write_text(
            f"# seed {seed}, {small.kind}: {reason}\n" + program_text([small]))
    bad_texts = fuzz_parser(args.parser, args.seed)
    for k, (text, why) in enumerate(bad_texts):
        out.mkdir(parents=True, exist_ok=True)
        (out / f"parser_{k}.tir").write_text(f"# {why}\n{text}")
    print(f"programs {args.programs}, statements {statements}, compiles {len(jobs)}, "
          f"mismatches {len(failures)}, crashes {len(crashes)}, "
          f"parser texts {args.parser} ({len(bad_texts)} escaped), "
          f"{time.time() - start:.0f} s")
    return 1 if failures or crashes or bad_texts else 0


if __name__ == "__main__":
    sys.exit(main())
