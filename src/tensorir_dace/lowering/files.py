"""Writing SDFG files that depend only on the program: ids derived from content.

DaCe gives every element a fresh random ``guid``, so saving the same SDFG
twice gives two different files.  :func:`save` replaces each distinct id by
one derived from the SDFG's content hash and the order of first appearance,
so an unchanged program gives a byte-identical file (and a clean diff)."""

from __future__ import annotations

import hashlib
import os
import uuid
from typing import Any

import dace


def _renumber(obj: Any, seed: str, ids: dict[str, str]) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "guid" and isinstance(value, str):
                if value not in ids:
                    digest = hashlib.sha256(f"{seed}:{len(ids)}".encode()).digest()
                    ids[value] = str(uuid.UUID(bytes=digest[:16], version=4))
                obj[key] = ids[value]
            else:
                _renumber(value, seed, ids)
    elif isinstance(obj, list):
        for value in obj:
            _renumber(value, seed, ids)


def stable_json(sdfg: dace.SDFG) -> dict[str, Any]:
    """``sdfg.to_json()`` with content-derived element ids."""
    data = sdfg.to_json(hash=True)
    _renumber(data, data["attributes"].get("hash") or sdfg.hash_sdfg(), {})
    return data


def save(sdfg: dace.SDFG, path: str | os.PathLike) -> None:
    """Save ``sdfg`` like ``sdfg.save(path)``, but deterministically."""
    with open(path, "w") as fp:
        dace.serialize.dump(stable_json(sdfg), fp)


def expanded(sdfg: dace.SDFG) -> dace.SDFG:
    """A copy with every library node expanded: loads in plain DaCe, without
    this package (library nodes name their Python class in the file)."""
    import copy
    dup = copy.deepcopy(sdfg)
    dup.expand_library_nodes(recursive=True)
    return dup
