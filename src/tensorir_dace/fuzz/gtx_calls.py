"""The call contract (:mod:`.calls`) for programs in GT4Py's spelling.

The neighbour tables of such a program arrive in ``offset_provider=``, not as
parameters, so a mutated call moves them there: each table the program reads
is mutated as a parameter of its Tensor IR program would be (a bad entry,
another dtype, a missing table, a list …) and handed back through the
provider, next to the ones the program does not read.  The domain's bounds are
scalar parameters and get the scalar mutations (out of range, wrong type).
"""

from __future__ import annotations

import random
from typing import Any

from .calls import call_contract

__all__ = ["gtx_call_contract"]


def gtx_call_contract(prog: Any, args: dict[str, Any], provider: dict[str, Any],
                      r: random.Random, calls: int) -> list[str]:
    """``calls`` mutated calls of the decorated GT4Py-style ``prog`` (compiled
    against interpreted) around the valid call ``prog(**args,
    offset_provider=provider)``; a message per call that broke the contract."""
    prog(**_copies(args), offset_provider=provider, backend="interpreter")   # binds the tables
    # the specialisation of these arrays (half levels make some longer)
    program = prog.specialize(**_copies(args), offset_provider=provider).program
    read = {p.name for p in program.params if p.name in provider and p.name not in args}

    def through(backend: str):
        def call(**kw: Any) -> None:
            given = {n: t for n, t in provider.items() if n not in read}
            given |= {n: kw.pop(n) for n in read if n in kw}
            prog(**kw, offset_provider=given, backend=backend)
        return call

    return call_contract(program, through("compiled"), args | {n: provider[n] for n in read},
                         r, calls, reference=through("interpreter"),
                         loose=set(args))     # compared as the programs' runs are


def _copies(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.copy() if hasattr(v, "copy") and not isinstance(v, (int, float)) else v)
            for k, v in args.items()}
