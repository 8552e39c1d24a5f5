"""One self-contained HTML page per program: DaCe's SDFG renderer, the Tensor IR
text beside it, and a selector for every pipeline stage.

The page works offline and can be mailed: DaCe's renderer bundle
(``dace/viewer/webclient/dist/sdfv.js``) is inlined, patched so that it does
not look for its own URL (it throws when inlined), and a Content Security
Policy forbids every fetch (its lazily loaded chunks are editor language
files the page never needs).  No template engine is needed."""

from .page import page_html, view

__all__ = ["page_html", "view"]
