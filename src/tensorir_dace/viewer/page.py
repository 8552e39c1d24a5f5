"""Building and writing the viewer page (see the package docstring)."""

from __future__ import annotations

import html
import json
import os
import pathlib
import re
import webbrowser
from typing import Any

from .. import ir
from ..errors import TensorIRError
from ..lowering.files import stable_json
from ..lowering.stages import sdfg_stages

_TEMPLATE = pathlib.Path(__file__).with_name("page.html")

# webpack finds its public path from its <script src>; inlined there is none.
# Chunks are never loaded, so any base will do.
_PUBLIC_PATH_THROW = ('if(!e)throw new Error("Automatic publicPath is not supported in this '
                      'browser");')
_PUBLIC_PATH_FIX = 'if(!e)e="./";'

# The lazily loaded chunks that rendering an SDFG needs (the C++ syntax of
# tasklet code); the browser test fails when another one is requested.
_CHUNKS = ("6018",)

# Fonts the bundle's style sheets name but DaCe's package does not ship: no URL.
_FONT = re.compile(r'n\.p\+"[0-9a-f]{20}\.(?:woff2|woff|ttf)"')


def _read(path: pathlib.Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as e:
        raise TensorIRError(f"DaCe's SDFG renderer is missing ({path}): {e.strerror}") from None


def _script_safe(js: str) -> str:
    """Keep the HTML parser inside the script element: no "</script", "<!--", "<script"."""
    for tag in ("</script", "<!--", "<script"):
        js = js.replace(tag, "\\x3C" + tag[1:])
    return js


def _bundle() -> str:
    """The renderer's scripts: the needed chunks first (webpack picks them up
    as already loaded), then the patched bundle."""
    import dace
    dist = pathlib.Path(dace.__file__).parent / "viewer" / "webclient" / "dist"
    js = _read(dist / "sdfv.js")
    if _PUBLIC_PATH_THROW not in js:
        raise TensorIRError(f"this DaCe version's renderer ({dist / 'sdfv.js'}) is not "
                            "supported by the "
                            "viewer: its public-path code changed")
    js = _FONT.sub('"data:font/woff2;base64,"', js.replace(_PUBLIC_PATH_THROW, _PUBLIC_PATH_FIX))
    chunks = [_read(dist / f"{c}.js") for c in _CHUNKS]
    return "\n</script>\n<script>".join(_script_safe(j) for j in chunks + [js])


def program_of(obj: Any) -> ir.Program:
    """The Tensor IR program of a parsed, compiled or decorated program or a
    specialisation."""
    if isinstance(obj, ir.Program):
        return obj
    program = getattr(obj, "program", None)
    if isinstance(program, ir.Program):
        return program          # CompiledProgram, Specialization
    if hasattr(obj, "specialize"):     # a decorated program
        try:
            return obj.ir
        except TensorIRError as e:
            name = getattr(obj, "__name__", "prog")
            raise type(e)(f"{e.message}; to view it, view a specialisation: "
                          f"{name}.specialize(args).view()", e.loc) from None
    raise TensorIRError(f"cannot view a {type(obj).__name__}: expected a parsed, compiled or "
                        "decorated program")


def _summary(sdfg) -> str:
    states = list(sdfg.states())
    nodes = sum(len(s.nodes()) for s in states)
    return f"{len(states)} states, {nodes} nodes, {len(sdfg.arrays)} containers"


def page_html(program: ir.Program) -> str:
    """The page of ``program``, with every pipeline stage."""
    from ..syntax import format as fmt
    stages = sdfg_stages(program)
    data = {name: {"sdfg": json.dumps(stable_json(sdfg)), "summary": _summary(sdfg)}
            for name, sdfg in stages.items()}
    blob = json.dumps(data).replace("</", "<\\/")
    options = "".join(f'<option value="{html.escape(n)}">{html.escape(n)}</option>'
                      for n in stages)
    title = html.escape(f"{program.name}: Tensor IR and SDFG")
    page = _TEMPLATE.read_text(encoding="utf-8")
    # The bundle goes in last: it is large and must not be searched for markers.
    for marker, value in (("__TITLE__", title), ("__OPTIONS__", options),
                          ("__TEXT__", html.escape(fmt(program))), ("__STAGES__", blob)):
        page = page.replace(marker, value)
    head, _, tail = page.partition("__SDFV__")
    return head + _bundle() + tail


def view(obj: Any, path: str | os.PathLike | None = None, open: bool = False) -> pathlib.Path:
    """Write the viewer page of ``obj`` (a parsed, compiled or decorated program,
    or a specialisation) and return its path (default ``<name>.html`` in the
    current directory) and print the path.  ``open=True`` opens it in the web
    browser; otherwise none is launched."""
    program = program_of(obj)
    out = pathlib.Path(path if path is not None else f"{program.name}.html")
    out.write_text(page_html(program), encoding="utf-8")
    print(f"wrote {out}" + ("" if open else "  (open it in a web browser)"))
    if open:
        webbrowser.open(out.resolve().as_uri())
    return out
