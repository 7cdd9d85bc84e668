"""The PNG view: an overview picture of the whole alignment, drawn with Pillow and numpy.

Each residue is a block of ``cw x ch`` pixels (up to 8 x 12). Taller or wider alignments than
the picture allows are binned: a pixel is the mean colour of its rows (and columns), so 10^5
rows fit in ``max_height`` pixels and gappy regions show pale. Below the residues are the
consensus line and a bar plot of per-column conservation; names are written when rows are at
least 10 pixels tall; the guide tree is drawn on the left when asked.
"""

from __future__ import annotations

import io
import os

import numpy as np

from torchmsa.errors import ArgumentError, FormatError
from torchmsa.view import tracks
from torchmsa.view.colors import (
    GAP_COLOR,
    Coloring,
    cell_colors,
    check_scheme,
    coloring,
    rgb,
    symbol_table,
)
from torchmsa.view.model import View, prepare

__all__ = ["to_png", "MAX_WIDTH", "MAX_HEIGHT"]

MAX_WIDTH = 2400
MAX_HEIGHT = 2400
MAX_CELL = (8, 12)  # pixels per residue, wide x tall
MARGIN = 10
RULER_H = 22
PLOT_H = 60
TREE_W = 160
NAMES_MAX_W = 220
NAME_ROW_MIN = 10  # pixels per row from which names are written
CHUNK_CELLS = 1 << 21
_PACK_MAX = ((1 << 21) - 1) // 255  # cells one packed colour sum can hold
INK = (40, 40, 40)
BAR = (91, 125, 177)


def _font(size: int):
    from PIL import ImageFont

    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: one bitmap size
        return ImageFont.load_default()


def _bins(n: int, limit: int) -> np.ndarray | None:
    """Start index of each of ``limit`` near-equal bins of ``n`` items, or None if n fits."""
    return None if n <= limit else (np.arange(limit, dtype=np.int64) * n) // limit


def _byte_table(col: Coloring) -> np.ndarray:
    """``uint8 [C or 1, 256]``: the palette index (gaps: ``len(col.palette)``) of every byte."""
    return symbol_table(col)[:, tracks.symbols(np.arange(256, dtype=np.uint8))]


def _colour_matrix(chars: np.ndarray, col: Coloring, row_starts, col_starts) -> np.ndarray:
    """``uint8 [h, w, 3]``: the mean colour of each (row bin, column bin) of ``chars``.

    Colours are packed 21 bits a channel into one ``uint64`` so that one gather and one sum
    serve the three channels; a packed sum holds up to :data:`_PACK_MAX` cells.
    """
    n, width = chars.shape
    palette = rgb((*col.palette, GAP_COLOR)).astype(np.uint64)
    packed = palette[:, 0] | (palette[:, 1] << np.uint64(21)) | (palette[:, 2] << np.uint64(42))
    table = packed[_byte_table(col)]  # [C or 1, 256]
    offsets = 0 if len(table) == 1 else np.arange(width, dtype=np.int32)[None, :] * 256
    h = n if row_starts is None else len(row_starts)
    w = width if col_starts is None else len(col_starts)
    rows_per = np.diff(np.append(row_starts, n)) if row_starts is not None else np.ones(h, int)
    cols_per = np.diff(np.append(col_starts, width)) if col_starts is not None else np.ones(w, int)
    row_bin = np.arange(n)
    if row_starts is not None:
        row_bin = np.searchsorted(row_starts, row_bin, "right") - 1
    step = max(1, min(CHUNK_CELLS // max(width, 1), _PACK_MAX // int(cols_per.max())))
    total = np.zeros((h, w, 3), dtype=np.uint64)
    mask = np.uint64((1 << 21) - 1)
    for a in range(0, n, step):
        b = min(n, a + step)
        block = table.ravel()[chars[a:b].astype(np.int32) + offsets]  # [k, C] uint64
        if col_starts is not None:
            block = np.add.reduceat(block, col_starts, axis=1)
        bins = row_bin[a:b]
        starts = np.concatenate(([0], np.flatnonzero(np.diff(bins)) + 1))
        if len(starts) < b - a:
            block = np.add.reduceat(block, starts, axis=0)
        for k in range(3):
            total[bins[starts], :, k] += (block >> np.uint64(21 * k)) & mask
    mean = total / (rows_per[:, None] * cols_per[None, :])[:, :, None]
    return np.rint(mean).astype(np.uint8)


def _bin_mean(values: np.ndarray, starts) -> np.ndarray:
    if starts is None:
        return values
    return (
        np.add.reduceat(values, starts, axis=0)
        / np.diff(np.append(starts, len(values)))[(slice(None),) + (None,) * (values.ndim - 1)]
    )


def _nice_step(px_per_col: float, min_px: float = 60) -> int:
    p = 1
    while True:
        for m in (1, 2, 5):
            if m * p * px_per_col >= min_px:
                return m * p
        p *= 10


def _fit(draw, text: str, font, width: int) -> str:
    if draw.textlength(text, font=font) <= width:
        return text
    while text and draw.textlength(text + "\u2026", font=font) > width:
        text = text[:-1]
    return text + "\u2026"


def _picture(view: View, col: Coloring, consensus: bool, max_width: int, max_height: int):
    from PIL import Image, ImageDraw

    n, width = view.chars.shape
    row_starts, col_starts = _bins(n, max_height), _bins(width, max_width)
    cw = 1 if col_starts is not None else max(1, min(MAX_CELL[0], max_width // width))
    ch = 1 if row_starts is not None else max(1, min(MAX_CELL[1], max_height // n))
    matrix = _colour_matrix(view.chars, col, row_starts, col_starts)
    matrix = np.repeat(np.repeat(matrix, ch, axis=0), cw, axis=1)
    mh, mw = matrix.shape[:2]

    font, small = _font(12), _font(10)
    probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
    with_names = ch >= NAME_ROW_MIN
    labels = ["conservation"] + (["consensus"] if consensus else [])
    texts = labels + (view.names if with_names else [])
    label_w = min(NAMES_MAX_W, max(int(probe.textlength(t, font=font)) for t in texts)) + 10
    tree_w = TREE_W if view.dendrogram is not None else 0
    title = f"{view.title}: {n} sequences x {width} columns"
    if view.first > 1 or width < view.total[1]:
        title += f" (columns {view.first}-{view.first + width - 1} of {view.total[1]})"
    title += f", {col.scheme} colours"
    cons_h = max(ch, 8) if consensus else 0

    x0 = MARGIN + tree_w + label_w
    y_title = MARGIN
    y0 = y_title + 20 + RULER_H
    y_cons = y0 + mh + 6
    y_plot = y_cons + (cons_h + 6 if consensus else 0)
    total_w = max(x0 + mw + MARGIN, MARGIN * 2 + int(probe.textlength(title, font=font)))
    total_h = y_plot + PLOT_H + MARGIN
    img = Image.new("RGB", (total_w, total_h), "white")
    img.paste(Image.fromarray(matrix), (x0, y0))
    draw = ImageDraw.Draw(img)
    draw.text((MARGIN, y_title), title, fill=INK, font=font)

    px_per_col = mw / width
    step = _nice_step(px_per_col)
    first_tick = -(-view.first // step) * step
    for pos in range(first_tick, view.first + width, step):
        x = x0 + int((pos - view.first + 0.5) * px_per_col)
        draw.line([(x, y0 - 6), (x, y0 - 1)], fill=INK)
        draw.text((x, y0 - 7), str(pos), fill=INK, font=small, anchor="mb")

    if with_names:
        for i, name in enumerate(view.names):
            y = y0 + i * ch + ch // 2
            draw.text((x0 - 6, y), _fit(draw, name, font, label_w - 10), fill=INK, font=font,
                      anchor="rm")  # fmt: skip

    if consensus:
        syms = tracks.symbols(np.frombuffer(view.consensus.encode("ascii"), np.uint8)[None, :])
        strip = rgb((*col.palette, GAP_COLOR))[cell_colors(syms, col)[0]].astype(np.float64)
        strip = np.rint(_bin_mean(strip, col_starts)).astype(np.uint8)
        strip = np.repeat(np.repeat(strip[None], cons_h, axis=0), cw, axis=1)
        img.paste(Image.fromarray(strip), (x0, y_cons))
        draw.text((x0 - 6, y_cons + cons_h // 2), "consensus", fill=INK, font=font, anchor="rm")

    heights = np.rint(_bin_mean(view.conservation, col_starts) * (PLOT_H - 4)).astype(np.int64)
    heights = np.repeat(heights, cw)
    gap = cw > 3  # a pixel between bars when they are wide
    filled = np.arange(PLOT_H)[:, None] >= (PLOT_H - heights)[None, :]
    if gap:
        filled[:, cw - 1 :: cw] = False
    plot = np.full((PLOT_H, mw, 3), 255, dtype=np.uint8)
    plot[filled] = BAR
    img.paste(Image.fromarray(plot), (x0, y_plot))
    draw.line([(x0, y_plot + PLOT_H), (x0 + mw - 1, y_plot + PLOT_H)], fill=(190, 190, 190))
    draw.text((x0 - 6, y_plot + PLOT_H // 2), "conservation", fill=INK, font=font, anchor="rm")

    if view.dendrogram is not None:
        d, tx, span = view.dendrogram, MARGIN, tree_w - 10
        ys = mh / n
        for xa, xb, y in d.h.tolist():
            yy = y0 + y * ys
            draw.line([(tx + xa * span, yy), (tx + xb * span, yy)], fill=INK)
        for x, ya, yb in d.v.tolist():
            draw.line([(tx + x * span, y0 + ya * ys), (tx + x * span, y0 + yb * ys)], fill=INK)
    return img


def to_png(
    aln,
    path: str | os.PathLike | None = None,
    *,
    color: str = "clustal",
    consensus: bool = True,
    tree=False,
    region=None,
    rows=None,
    title: str | None = None,
    max_width: int = MAX_WIDTH,
    max_height: int = MAX_HEIGHT,
) -> bytes:
    """An overview picture of the alignment, with its consensus line and conservation plot.

    Arguments:
        aln: a :class:`torchmsa.Alignment` or anything with ``names`` and gapped ``rows``.
        path: also write the PNG here.
        color, consensus, tree, region, rows, title: as in :func:`torchmsa.view.to_html`.
        max_width, max_height: the most pixels the residues may take; beyond, columns or rows
            are binned (mean colour).

    Returns:
        The PNG file's bytes.

    Raises:
        ArgumentError: a bad argument, or ``path`` cannot be written.
        FormatError: Pillow is not installed.
    """
    check_scheme(color)
    for name, value in (("max_width", max_width), ("max_height", max_height)):
        if not isinstance(value, int) or value < 16:
            raise ArgumentError(f"Invalid value for `{name}` argument: {value!r}; use >= 16")
    try:
        import PIL  # noqa: F401
    except ImportError:
        raise FormatError(
            "writing a PNG needs Pillow: pip install pillow (or write an .html page)"
        ) from None
    view = prepare(aln, rows=rows, region=region, tree=tree, title=title)
    col = coloring(color, view.profile, view.nucleotide)
    img = _picture(view, col, consensus, max_width, max_height)
    buf = io.BytesIO()
    # zlib's fastest level for big pictures: 2400 x 2400 noisy pixels take seconds at level 6
    img.save(buf, "PNG", compress_level=6 if img.width * img.height < 1 << 20 else 1)
    data = buf.getvalue()
    if path is not None:
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            where = os.fsdecode(path)
            raise ArgumentError(f"cannot write {where!r}: {exc.strerror or exc}") from None
    return data
