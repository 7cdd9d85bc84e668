"""The HTML views: a self-contained page (:func:`to_html`) and a notebook preview
(:func:`repr_html`).

The page is one file with no network access: its style, its script (``assets/``) and the data
(rows as strings in a JSON blob) are inlined. It draws only the visible rows and columns on a
canvas, so 10^4 x 2*10^3 alignments scroll smoothly; names are real text (searchable,
selectable). ``torchmsa serve`` can build the same page from :func:`page_data`.
"""

from __future__ import annotations

import html
import json
import re
from importlib import resources

import numpy as np

from torchmsa.view.colors import GAP_COLOR, SCHEMES, check_scheme, coloring
from torchmsa.view.model import View, prepare

__all__ = ["to_html", "repr_html", "page_data", "render_page"]

_SYMS = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_PLACEHOLDER = re.compile(r"\{\{(STYLE|SCRIPT|TITLE|DATA)\}\}")
_PREVIEW_ROWS = 12
_PREVIEW_COLUMNS = 80
_PREVIEW_NAME = 24


def _asset(name: str) -> str:
    return resources.files("torchmsa.view").joinpath("assets", name).read_text("utf-8")


def _encode_lut(lut: np.ndarray) -> str:
    return np.frombuffer(_SYMS, dtype=np.uint8)[lut.ravel()].tobytes().decode("ascii")


def page_data(view: View, color: str = "clustal", consensus: bool = True) -> dict:
    """The JSON-ready data the page's script draws from."""
    check_scheme(color)
    schemes = {}
    for name in SCHEMES:
        col = coloring(name, view.profile, view.nucleotide)
        schemes[name] = {"palette": list(col.palette), "lut": _encode_lut(col.lut)}
    tree = None
    if view.dendrogram is not None:
        d = view.dendrogram

        def flat(seg: np.ndarray, scale: list[float]) -> list[float]:
            out = np.round(seg * np.array(scale), 2)
            return [int(x) if x.is_integer() else x for x in out.ravel().tolist()]

        # x in thousandths of the depth, y in rows
        tree = {"h": flat(d.h, [1000, 1000, 1]), "v": flat(d.v, [1000, 1, 1])}
    offsets = None
    if view.first > 1:
        offsets = view.residues_before
    return {
        "title": view.title,
        "names": view.names,
        "rows": view.rows,
        "width": int(view.chars.shape[1]),
        "first": view.first,
        "total": list(view.total),
        "offsets": offsets,
        "scheme": color,
        "schemes": schemes,
        "gap": GAP_COLOR,
        "consensus": view.consensus if consensus else None,
        "conservation": np.rint(view.conservation * 100).astype(int).tolist(),
        "tree": tree,
    }


def render_page(data: dict) -> str:
    """The page for ``data`` (:func:`page_data`)."""
    blob = json.dumps(data, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c")
    parts = {
        "STYLE": _asset("page.css"),
        "SCRIPT": _asset("page.js"),
        "TITLE": html.escape(data["title"]),
        "DATA": blob,
    }
    return _PLACEHOLDER.sub(lambda m: parts[m.group(1)], _asset("page.html"))


def to_html(
    aln,
    *,
    color: str = "clustal",
    consensus: bool = True,
    tree=False,
    region=None,
    rows=None,
    title: str | None = None,
) -> str:
    """A self-contained HTML page showing the alignment.

    Arguments:
        aln: a :class:`torchmsa.Alignment`, or anything with ``names`` and gapped ``rows``
            (such as :func:`torchmsa.view.load`'s result).
        color: ``"clustal"``, ``"zappo"``, ``"identity"`` or ``"hydrophobicity"`` (the page
            can switch between them).
        consensus: show the consensus line.
        tree: ``True`` to show the guide tree beside the rows (rows then follow the tree), or
            a Newick string.
        region: columns to show, ``"START-END"`` (1-based, inclusive) or a pair.
        rows: names of the rows to show, ``"NAME,NAME"`` or a list.
        title: the page title (default: the file name, else ``"alignment"``).

    Returns:
        The page's HTML text.

    Raises:
        ArgumentError: a bad ``color``, ``region``, ``rows`` or ``tree``.
    """
    check_scheme(color)
    view = prepare(aln, rows=rows, region=region, tree=tree, title=title)
    return render_page(page_data(view, color, consensus))


def _spans(row: str, lut_index: np.ndarray, palette: tuple[str, ...]) -> str:
    out, start = [], 0
    for k in range(1, len(row) + 1):
        if k == len(row) or lut_index[k] != lut_index[start]:
            text = html.escape(row[start:k])
            if lut_index[start] == len(palette):  # gaps: the page's own background
                out.append(text)
            else:
                out.append(f'<span style="background:{palette[lut_index[start]]}">{text}</span>')
            start = k
    return "".join(out)


def repr_html(aln, *, color: str = "clustal") -> str:
    """A compact static preview (the first rows and columns, coloured) for Jupyter's
    ``_repr_html_``; it needs no script, so it shows in untrusted notebooks too."""
    from torchmsa.view import tracks
    from torchmsa.view.colors import cell_colors

    n, width = len(aln.names), len(aln.rows[0]) if len(aln.names) else 0
    cls = type(aln).__name__
    if n == 0 or width == 0:
        return f"<div><b>{html.escape(cls)}</b>: {n} sequences &times; {width} columns</div>"
    view = prepare(aln, region=(1, min(width, _PREVIEW_COLUMNS)))
    col = coloring(color, view.profile, view.nucleotide)
    shown = min(n, _PREVIEW_ROWS)
    index = cell_colors(tracks.symbols(view.chars[:shown]), col)
    label = max(len(x) for x in view.names[:shown] + ["consensus"])
    label = min(label, _PREVIEW_NAME)

    def name(text: str) -> str:
        text = text if len(text) <= label else text[: label - 1] + "\u2026"
        return html.escape(text.ljust(label))

    lines = [name(view.names[i]) + "  " + _spans(view.rows[i], index[i], col.palette)
             for i in range(shown)]  # fmt: skip
    if n > shown:
        lines.append(html.escape(f"... {n - shown} more rows"))
    cons = tracks.symbols(np.frombuffer(view.consensus.encode("ascii"), np.uint8)[None, :])
    lines.append(name("consensus") + "  " + _spans(view.consensus, cell_colors(cons, col)[0],
                                                  col.palette))  # fmt: skip
    more = f", first {view.chars.shape[1]} shown" if width > view.chars.shape[1] else ""
    mode = getattr(aln, "metadata", {}).get("mode") if hasattr(aln, "metadata") else None
    made = f", mode {html.escape(str(mode))}" if mode else ""
    head = f"<b>{html.escape(cls)}</b>: {n} sequences &times; {width} columns{more}{made}"
    pre = "\n".join(lines)
    return (
        f'<div class="torchmsa-alignment"><div>{head}</div>'
        f'<pre style="font-family:monospace;font-size:12px;line-height:1.25;margin:4px 0">'
        f"{pre}</pre></div>"
    )
