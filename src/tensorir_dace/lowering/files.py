"""Writing SDFG files that depend only on the program: ids derived from content.

DaCe gives every element a fresh random ``guid``, so saving the same SDFG
twice gives two different files.  :func:`save` replaces each id by one
derived from the SDFG's content hash and the id's position in the file,
so an unchanged program gives a byte-identical file (and a clean diff).
Source file paths are reduced to file names, so the file does not depend
on the directory ``lower`` ran in."""

from __future__ import annotations

import copy
import hashlib
import os
import uuid
from typing import Any

import dace


def _file_names(obj: Any) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "source_files" and isinstance(value, list):
                obj[key] = [os.path.basename(str(f)) for f in value]
            else:
                _file_names(value)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _file_names(value)


def _renumber(obj: Any, seed: str, count: list[int]) -> None:
    """Give each ``guid`` the id derived from ``seed`` and its position (DaCe
    copies some ids, e.g. of memlets, so equal ids stay no more equal than
    their positions: that part of them is random too)."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key == "guid" and isinstance(value, str):
                digest = hashlib.sha256(f"{seed}:{count[0]}".encode()).digest()
                obj[key] = str(uuid.UUID(bytes=digest[:16], version=4))
                count[0] += 1
            else:
                _renumber(value, seed, count)
    elif isinstance(obj, (list, tuple)):
        for value in obj:
            _renumber(value, seed, count)


def stable_json(sdfg: dace.SDFG) -> dict[str, Any]:
    """``sdfg.to_json()`` with content-derived element ids."""
    data = sdfg.to_json()
    _file_names(data)
    digest = sdfg.hash_sdfg(copy.deepcopy(data))   # (it deletes keys of its argument)
    data["attributes"]["hash"] = digest
    _renumber(data, digest, [0])
    return data


def save(sdfg: dace.SDFG, path: str | os.PathLike) -> None:
    """Save ``sdfg`` like ``sdfg.save(path)``, but deterministically."""
    with open(path, "w") as fp:
        dace.serialize.dump(stable_json(sdfg), fp)


def expanded(sdfg: dace.SDFG) -> dace.SDFG:
    """A copy with every library node expanded: loads in plain DaCe, without
    this package (library nodes name their Python class in the file)."""
    dup = copy.deepcopy(sdfg)
    dup.expand_library_nodes(recursive=True)
    return dup
