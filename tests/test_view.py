"""``torchmsa.view``: tracks, colours, region/rows parsing, the tree layout, the PNG, the CLI verb,
and the HTML page opened in headless Chromium (skipped where Chromium or Selenium is missing)."""

from __future__ import annotations

import argparse
import io
import json
import math
import re
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from browser import chromium

from torchmsa.errors import ArgumentError, FormatError
from torchmsa.view import (
    LoadedAlignment,
    load,
    parse_region,
    parse_rows,
    repr_html,
    to_html,
    tracks,
)
from torchmsa.view import run as view_run
from torchmsa.view.cli import add_parser
from torchmsa.view.colors import SCHEMES, cell_colors, coloring
from torchmsa.view.dendrogram import distance_newick, layout, parse_newick
from torchmsa.view.model import prepare

PIL = pytest.importorskip("PIL", reason="Pillow is needed for the PNG view (pip install pillow)")
from PIL import Image  # noqa: E402

from torchmsa.view import to_png  # noqa: E402

DATA = Path(__file__).parent / "data"
SOD = DATA / "view_sod.fasta"  # examples/superoxide_dismutase.fasta aligned by torchmsa
SOD_TREE = DATA / "view_sod.nwk"  # its guide tree (torchmsa align --tree-out)


def aln(rows: list[str], names: list[str] | None = None) -> LoadedAlignment:
    names = names or [f"s{i}" for i in range(len(rows))]
    return LoadedAlignment(names, names, rows, "test")


def family(n: int, width: int, seed: int = 0) -> LoadedAlignment:
    """A synthetic protein family: one ancestor, ~20% of residues changed, gappy columns and
    ragged starts."""
    rng = np.random.default_rng(seed)
    letters = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY-", dtype=np.uint8)
    noise = rng.integers(0, 100, (n, width), dtype=np.uint8)
    idx = np.where(noise < 21, noise, rng.integers(0, 20, width, dtype=np.uint8))  # 20: gap
    gappy = rng.random(width) < 0.1
    idx = np.where(gappy & (noise < 80), np.uint8(20), idx)
    lead = rng.integers(0, max(1, width // 20), (n, 1))
    idx = np.where(np.arange(width) < lead, np.uint8(20), idx)
    text = letters[idx].tobytes().decode("ascii")
    rows = [text[i * width : (i + 1) * width] for i in range(n)]
    names = [f"seq{i:06d}" for i in range(n)]
    return LoadedAlignment(names, names, rows, "synthetic")


# --- parsing -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("100-400", (99, 400)),
        (" 1 - 500 ", (0, 500)),
        ("7", (6, 7)),
        ("-10", (0, 10)),
        ("490-", (489, 500)),
        ("2..3", (1, 3)),
        ((5, 5), (4, 5)),
        (None, (0, 500)),
    ],
    ids=lambda x: repr(x),
)
def test_parse_region(spec, expected):
    assert parse_region(spec, 500) == expected


@pytest.mark.parametrize("spec", ["0-5", "5-3", "1-501", "abc", "1-2-3", (0, 4), "", [1]])
def test_parse_region_errors_name_the_value_and_width(spec):
    with pytest.raises(ArgumentError, match=r"`region`.*1 <= START <= END <= 500"):
        parse_region(spec, 500)


def test_parse_rows_keeps_the_given_order_and_repeated_names():
    names = ["a", "b", "c", "b"]
    assert parse_rows(None, names) == [0, 1, 2, 3]
    assert parse_rows("c, a", names) == [2, 0]
    assert parse_rows(["b"], names) == [1, 3]
    assert parse_rows("a,a,c,", names) == [0, 2]
    with pytest.raises(ArgumentError, match=r"'zz' is not a row name"):
        parse_rows("a,zz", names)
    with pytest.raises(ArgumentError, match="no row is named"):
        parse_rows(" , ", names)


# --- tracks --------------------------------------------------------------------------------


def test_profile_counts_letters_in_either_case_and_both_gap_characters():
    chars = tracks.row_bytes(["AC-", "aC.", "A*G", "-CG"])
    prof = tracks.profile(chars)
    assert prof.dtype == torch.float64 and prof.shape == (3, 27)
    expected = torch.zeros(3, 27, dtype=torch.float64)
    expected[0, 0], expected[0, 26] = 0.75, 0.25  # A A A -
    expected[1, 2] = 0.75  # C C * C: '*' counts nowhere
    expected[2, 6], expected[2, 26] = 0.5, 0.5
    assert torch.equal(prof, expected)


def test_profile_in_blocks_equals_one_pass():
    a = family(50, 37, seed=3)
    chars = tracks.row_bytes(a.rows)
    whole = tracks.profile(chars)
    assert torch.equal(tracks.profile(chars, chunk_cells=37 * 3 + 5), whole)


def test_row_bytes_refuses_ragged_rows():
    with pytest.raises(FormatError, match=r"row #2 has 2 columns but row #1 has 3"):
        tracks.row_bytes(["ABC", "AB"])


def test_profile_equals_the_alignment_profile_tensor():
    import torchmsa

    seqs = {"a": "MKVLAAGIVGHE", "b": "MKVAGLVGHE", "c": "MRVLAAGIVG", "d": "MKVLSGIVGHEE"}
    alignment = torchmsa.align(seqs, device="cpu")
    view = prepare(alignment)
    letters = alignment.alphabet.letters
    ours = view.profile[:, [ord(ch) - 65 for ch in letters if ch.isalpha()] + [26]]
    theirs = alignment.profile(weighted=False, dtype=torch.float64)
    theirs = theirs[:, [i for i, ch in enumerate(letters) if ch.isalpha()] + [len(letters)]]
    assert torch.allclose(ours, theirs, rtol=0, atol=1e-12)


def test_conservation_by_hand():
    rows = ["AAAA--", "AAC-G-", "AGD-W-", "AHE-Y-"]
    cons = tracks.conservation(tracks.profile(tracks.row_bytes(rows)))
    assert cons[0] == 1.0  # one residue, no gaps
    assert cons[5] == 0.0  # all gaps
    assert cons[3] == pytest.approx(0.25)  # one residue in one row of four
    h = -(0.5 * math.log(0.5) + 2 * 0.25 * math.log(0.25))
    assert cons[1] == pytest.approx(1 - h / math.log(20))
    twenty = ["ACDEFGHIKLMNPQRSTVWY"[i] for i in range(20)]
    assert tracks.conservation(tracks.profile(tracks.row_bytes(twenty)))[0] == pytest.approx(0)
    nuc = tracks.conservation(tracks.profile(tracks.row_bytes(["A", "C", "G", "T"])), True)
    assert nuc[0] == pytest.approx(0)


def test_consensus_rules():
    rows = ["AAW-L-", "ACW-I-", "AGY-V-", "ACY-MA"]
    # A 100% -> 'A'; C 50% -> 'C'; W and Y 50% each -> 'W' (the first of a tie); all gaps
    # -> '-'; I, L, M, V 25% each -> 'i' (the first of the tie); gaps in 3 rows of 4 -> '-'
    assert tracks.consensus(tracks.profile(tracks.row_bytes(rows))) == "ACW-i-"


# --- colours -------------------------------------------------------------------------------


def _palette_of(rows, scheme, column, letter, nucleotide=False):
    prof = tracks.profile(tracks.row_bytes(rows))
    col = coloring(scheme, prof, nucleotide)
    lut = col.lut[0 if len(col.lut) == 1 else column]
    return col.palette[lut[ord(letter) - 65]]


def test_clustal_colours_depend_on_the_column():
    rows = ["LGPC", "LGPC", "LGPC", "IGPC", "KGAC", "EGSC", "LNPC", "LGPC"]
    assert _palette_of(rows, "clustal", 0, "L") == "#80a0f0"  # 7/8 hydrophobic > 60%
    assert _palette_of(rows, "clustal", 0, "K") == "#ececec"  # K alone 1/8, KR 1/8
    assert _palette_of(rows, "clustal", 1, "N") == "#ececec"
    assert _palette_of(rows, "clustal", 1, "G") == "#f09048"  # G always orange
    assert _palette_of(rows, "clustal", 2, "P") == "#c0c000"  # P always yellow
    assert _palette_of(rows, "clustal", 2, "S") == "#15c015"  # P and A make 7/8 hydrophobic
    assert _palette_of(rows, "clustal", 3, "C") == "#f08080"  # C 100% > 85%: pink over blue
    mixed = ["L", "K", "E", "S", "G"]
    assert _palette_of(mixed, "clustal", 0, "L") == "#ececec"
    assert _palette_of(["K", "R", "K", "E"], "clustal", 0, "R") == "#f01505"


def test_static_schemes_and_nucleotides():
    assert _palette_of(["A"], "zappo", 0, "D") == "#ff0000"
    assert _palette_of(["A"], "zappo", 0, "W") == "#ffc800"
    assert _palette_of(["A"], "hydrophobicity", 0, "I") == "#ff5a5a"  # most hydrophobic
    assert _palette_of(["A"], "hydrophobicity", 0, "R") == "#5a78ff"  # most hydrophilic
    for scheme in ("clustal", "zappo", "hydrophobicity"):
        assert _palette_of(["ACGT"], scheme, 0, "G", nucleotide=True) == "#ffb43c"
        assert _palette_of(["ACGT"], scheme, 0, "U", nucleotide=True) == "#ff6464"


def test_identity_shades_the_column_consensus_by_its_share():
    rows = ["AAAL", "AACK", "AADE", "AAAW", "ACGS"]
    assert _palette_of(rows, "identity", 0, "A") == "#6464ff"  # 100%
    assert _palette_of(rows, "identity", 1, "A") == "#9999ff"  # 80%: not > 80%
    assert _palette_of(rows, "identity", 1, "C") == "#ececec"
    assert _palette_of(rows, "identity", 2, "A") == "#ececec"  # 40%: not > 40%
    assert _palette_of(rows, "identity", 3, "E") == "#ececec"  # first of a tie, but 20%


def test_cell_colors_map_gaps_letters_and_others():
    prof = tracks.profile(tracks.row_bytes(["G-*g", "G.Pp"]))
    col = coloring("clustal", prof)
    idx = cell_colors(tracks.symbols(tracks.row_bytes(["G-*g", "G.Pp"])), col)
    gap, orange, yellow = (
        len(col.palette),
        col.palette.index("#f09048"),
        col.palette.index("#c0c000"),
    )
    assert idx.tolist() == [[orange, gap, 0, orange], [orange, gap, yellow, yellow]]


# --- tree ----------------------------------------------------------------------------------


def test_newick_parser_reads_quotes_lengths_and_comments():
    tree = parse_newick("((a:1,'b ''x''':2.5)90:0.5,[note]c:3e-1);")
    leaves = [tree.names[v] for v in range(len(tree.children)) if not tree.children[v]]
    assert leaves == ["a", "b 'x'", "c"]
    assert sorted(x for x in tree.lengths if x is not None) == [0.3, 0.5, 1.0, 2.5]
    for bad in ["((a,b);", "(a,b));", "(a:,b);", "(a,b):"]:
        with pytest.raises(FormatError, match="not a Newick tree"):
            parse_newick(bad)


def test_layout_orders_leaves_prunes_and_scales():
    names = ["a", "b", "c", "d"]
    d = layout("((d:1,(b:1,a:3):1):1,c:2);", names, [0, 1, 2, 3])
    assert d.order == [3, 1, 0, 2]
    assert d.h.shape == (6, 3) and d.v.shape == (3, 3)
    assert d.h[:, 1].max() == 1.0  # the deepest leaf (a, at depth 5) at x = 1
    assert sorted(d.h[:, 2].tolist()) == [0.5, 1.25, 1.5, 2.0, 2.5, 3.5]
    # keep a and d: c goes, the root keeps one child, (b, a) keeps one: a hangs 1 + 3 below
    pruned = layout("((d:1,(b:1,a:3):1):1,c:2);", names, [0, 3])
    assert pruned.order == [3, 0]
    assert pruned.h.tolist() == [[0.0, 0.25, 0.5], [0.0, 1.0, 1.5]]
    with pytest.raises(ArgumentError, match="tree leaf 'x' is not a row"):
        layout("(a,x);", names, [0])
    with pytest.raises(ArgumentError, match="row 'c' is not a leaf"):
        layout("(a,b);", names, [0, 2])


def test_layout_of_a_deep_tree_and_of_a_tree_without_lengths():
    n = 3000  # a caterpillar: recursion would overflow
    newick = "(" * (n - 1) + "x0," + ",".join(f"x{i})" for i in range(1, n)) + ";"
    d = layout(newick, [f"x{i}" for i in range(n)], list(range(n)))
    assert d.order == list(range(n)) and len(d.v) == n - 1
    assert d.h[:, 1].max() == 1.0


def test_distance_tree_for_files_without_one():
    rows = ["MKVLA", "MKVLS", "QRTWA", "QRTWS"]
    d = layout(
        distance_newick(tracks.row_bytes(rows), ["a", "b", "c", "d"]), list("abcd"), [0, 1, 2, 3]
    )
    assert set(map(frozenset, [d.order[:2], d.order[2:]])) == {frozenset({0, 1}), frozenset({2, 3})}
    big = family(1001, 5)
    with pytest.raises(ArgumentError, match="limited to 1000 rows"):
        prepare(big, tree=True)


# --- views ---------------------------------------------------------------------------------


def test_prepare_cuts_rows_region_and_follows_the_tree():
    a = load(SOD)
    v = prepare(a, rows="1gv3_A,1ar5_A", region="10-19")
    assert v.names == ["1gv3_A", "1ar5_A"] and v.first == 10 and v.total == (9, 217)
    assert v.rows == [a.rows[a.names.index(n)][9:19] for n in v.names]
    before = [sum(ch != "-" for ch in a.rows[a.names.index(n)][:9]) for n in v.names]
    assert v.residues_before == before
    t = prepare(a, tree=SOD_TREE.read_text())
    assert sorted(t.names) == sorted(a.names) and t.names[0] == "SODM_ALCEU"
    assert t.dendrogram is not None and len(t.dendrogram.v) == 8
    assert prepare(a, tree=True).dendrogram is not None  # computed from the rows
    assert not prepare(a).nucleotide and prepare(aln(["ACGT-A", "ACGTTA"])).nucleotide


def test_load_reads_every_alignment_format():
    for name in ("small.aln", "small.sto", "small.a3m", "small.fasta"):
        try:
            a = load(DATA / name)
        except FormatError:
            assert name == "small.fasta"  # unaligned: rows differ in length
            continue
        assert len(a) >= 2 and len({len(r) for r in a.rows}) == 1
    with pytest.raises(FormatError, match="no such file"):
        load(DATA / "view_missing.fasta")


def test_html_is_one_self_contained_file():
    names = ["x</script><b>", "y&z", "ünï"]
    page = to_html(
        aln(["MKV-L", "MRV-L", "MKVAL"], names), title="<t>", tree="((x</script><b>,y&z),ünï);"
    )
    assert page.startswith("<!DOCTYPE html>") and "<title>&lt;t&gt;</title>" in page
    assert not re.search(r"(src|href)=\"(?!data:)", page)  # nothing loaded from elsewhere
    assert "http://" not in page and "https://" not in page
    assert page.count("</script>") == 2  # the data blob cannot close its script element
    blob = re.search(r'<script type="application/json" id="msa-data">(.*?)</script>', page, re.S)
    data = json.loads(blob.group(1))
    assert data["names"] == names and data["rows"] == ["MKV-L", "MRV-L", "MKVAL"]
    assert set(data["schemes"]) == set(SCHEMES) and data["scheme"] == "clustal"
    assert len(data["conservation"]) == 5 and data["consensus"] == "MKV-L"
    assert to_html(aln(["MKV"]), consensus=False).count('"consensus":null') == 1
    with pytest.raises(ArgumentError, match="`color`"):
        to_html(aln(["MKV"]), color="rainbow")


def test_repr_html_is_a_compact_static_preview():
    a = family(30, 200)
    text = repr_html(a)
    assert "<script" not in text and "30 sequences &times; 200 columns, first 80 shown" in text
    assert "seq000011" in text and "seq000012" not in text and "18 more rows" in text
    assert len(text) < 60_000


def test_png_overview_of_the_example():
    a = load(SOD)
    data = to_png(a, tree=SOD_TREE.read_text())
    img = Image.open(io.BytesIO(data))
    assert img.format == "PNG" and img.mode == "RGB"
    assert img.width > 217 * 8 and 150 < img.height < 400
    assert len(img.getcolors(1 << 16)) > 20  # colours, not a blank picture


def test_png_bins_rows_and_columns_beyond_the_maximum(tmp_path):
    a = family(500, 300)
    out = tmp_path / "v.png"
    data = to_png(a, out, max_width=100, max_height=50, consensus=False, color="zappo")
    assert out.read_bytes() == data
    img = Image.open(io.BytesIO(data))
    assert img.height < 50 + 200 and img.width < 100 + 400
    with pytest.raises(ArgumentError, match="max_width"):
        to_png(a, max_width=0)


# --- command line --------------------------------------------------------------------------


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="torchmsa")
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(argv)
    return args.func(args)


def test_cli_writes_html_and_png(tmp_path, capsys):
    src = tmp_path / "sod.fasta"
    shutil.copy(SOD, src)
    assert _cli(["view", str(src)]) == 0
    assert (tmp_path / "sod.html").read_text().startswith("<!DOCTYPE html>")
    png = tmp_path / "part.png"
    argv = ["view", str(src), "-o", str(png), "--region", "10-60", "--color", "identity"]
    assert _cli([*argv, "--tree-file", str(SOD_TREE), "--no-consensus"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _cli(["view", str(src), "-o", "-", "--rows", "1ar5_A", "--title", "T"]) == 0
    assert '"names":["1ar5_A"]' in capsys.readouterr().out
    with pytest.raises(ArgumentError, match=r"--output .*\.html or \.png"):
        _cli(["view", str(src), "-o", str(tmp_path / "x.pdf")])
    with pytest.raises(FormatError, match="cannot read the tree"):
        _cli(["view", str(src), "--tree-file", str(tmp_path / "none.nwk")])
    assert view_run is not None


def test_cli_verb_in_the_torchmsa_command(tmp_path, capsys):
    from torchmsa.cli import main

    assert main(["view", "--help"]) == 0
    capsys.readouterr()
    assert main(["view", str(SOD), "-o", str(tmp_path / "a.html")]) == 0
    assert main(["view", str(SOD), "--region", "300-400", "-o", str(tmp_path / "b.html")]) == 2
    assert "torchmsa: error: Invalid value for `region` argument" in capsys.readouterr().err


# --- in a browser --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium (:func:`browser.chromium`)."""
    yield from chromium(1200, 800)


def _open(driver, path: Path) -> float:
    """Open ``path``; the seconds until the page has drawn its first frame."""
    driver.get_log("browser")  # drop earlier messages
    start = time.perf_counter()
    driver.get(path.as_uri())
    _wait(driver, "return document.body.dataset.ready === '1'")
    return time.perf_counter() - start


def _wait(driver, script: str, timeout: float = 20.0):
    end = time.monotonic() + timeout
    while True:
        value = driver.execute_script(script)
        if value or time.monotonic() > end:
            assert value, f"timed out waiting for: {script}"
            return value
        time.sleep(0.02)


def _shown_names(driver) -> list[str]:
    """Texts of the name elements that lie (at least partly) inside the names pane."""
    return driver.execute_script(
        """const pane = document.getElementById('names').getBoundingClientRect();
        return [...document.querySelectorAll('#names div')].filter((el) => {
          const r = el.getBoundingClientRect();
          return r.bottom > pane.top && r.top < pane.bottom && el.offsetHeight > 0;
        }).map((el) => el.textContent);"""
    )


def _errors(driver) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _not_blank(png: bytes) -> None:
    img = Image.open(io.BytesIO(png)).convert("RGB")
    colours = img.getcolors(1 << 20)
    white = sum(c for c, rgb in colours if rgb == (255, 255, 255)) / (img.width * img.height)
    assert len(colours) > 20 and white < 0.9, (len(colours), white)


def _scroll_to_end(driver, names: list[str]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    driver.execute_script("window.__same_page = true")
    main = driver.find_element(By.ID, "main")
    main.send_keys(Keys.END)  # what a user presses on the focused alignment
    main.send_keys(Keys.CONTROL, Keys.END)
    _wait(driver, "const m = document.getElementById('main');"
          "return m.scrollTop + m.clientHeight >= m.scrollHeight - 1")  # fmt: skip
    _wait(driver, f"return msaView.visibleRows().at(-1) === {json.dumps(names[-1])}")
    shown = _shown_names(driver)
    assert shown[-1] == names[-1]
    assert shown == names[len(names) - len(shown) :]
    assert driver.execute_script("return window.__same_page === true")  # not reloaded


def test_page_in_chromium(browser, tmp_path):
    a = family(300, 700, seed=1)
    page = tmp_path / "family.html"
    page.write_text(to_html(a), encoding="utf-8")
    _open(browser, page)
    assert _errors(browser) == []
    shown = _shown_names(browser)
    assert len(shown) >= 20 and shown == a.names[: len(shown)]
    _not_blank(browser.get_screenshot_as_png())
    _scroll_to_end(browser, a.names)

    from selenium.webdriver.common.by import By

    box = browser.find_element(By.ID, "search")
    box.send_keys("seq000150")
    _wait(browser, "return document.querySelector('#names div.hit') !== null")
    hit = browser.execute_script("return document.querySelector('#names div.hit').textContent")
    assert hit == "seq000150" and browser.find_element(By.ID, "found").text == "1 of 1"
    for scheme in SCHEMES:
        browser.execute_script(f"msaView.setScheme({json.dumps(scheme)})")
    browser.execute_script("msaView.zoom(-4)")
    browser.execute_script("msaView.zoom(1)")
    time.sleep(0.1)
    _not_blank(browser.get_screenshot_as_png())
    assert _errors(browser) == []


def test_page_with_tree_and_region_in_chromium(browser, tmp_path):
    page = tmp_path / "sod.html"
    page.write_text(to_html(load(SOD), tree=SOD_TREE.read_text(), region="20-120"))
    _open(browser, page)
    assert _errors(browser) == []
    expected = prepare(load(SOD), tree=SOD_TREE.read_text()).names
    assert _shown_names(browser) == expected
    tree = browser.execute_script(
        "const c = document.getElementById('tree'); return [c.width, c.height];"
    )
    assert tree[0] > 100
    _not_blank(browser.get_screenshot_as_png())
    stats = browser.execute_script("return document.getElementById('stats').textContent")
    assert stats == "9 sequences \u00d7 101 columns (columns 20\u2013120 of 217)"


@pytest.fixture(scope="module")
def large():
    """10^4 rows x 2*10^3 columns."""
    return family(10_000, 2_000, seed=2)


@pytest.mark.slow
def test_large_page_size_open_time_and_scrolling(browser, tmp_path, large):
    """10^4 rows x 2*10^3 columns: under 30 MB, open in under 3 s, scroll to the end."""
    a = large
    start = time.perf_counter()
    text = to_html(a)
    build = time.perf_counter() - start
    page = tmp_path / "large.html"
    page.write_text(text, encoding="utf-8")
    size = page.stat().st_size
    assert size < 30e6, size
    opened = _open(browser, page)
    drawn = browser.execute_script("return msaView.readyAt") / 1000
    print(f"\n10^4 x 2*10^3 page: {size / 1e6:.1f} MB, built in {build:.2f} s, "
          f"first frame {drawn:.2f} s after navigation, {opened:.2f} s wall")  # fmt: skip
    assert opened < 3.0
    assert _errors(browser) == []
    assert _shown_names(browser) == a.names[: len(_shown_names(browser))]
    browser.execute_script("msaView.goTo(5000)")
    _wait(browser, "return msaView.visibleRows().includes('seq005000')")
    _scroll_to_end(browser, a.names)
    _not_blank(browser.get_screenshot_as_png())
    assert _errors(browser) == []


@pytest.mark.slow
def test_png_of_1e5_rows_in_under_10_s(large):
    names = [f"seq{i:06d}" for i in range(100_000)]
    a = LoadedAlignment(names, names, large.rows * 10, "synthetic")  # rows shared, not copied
    start = time.perf_counter()
    data = to_png(a)
    seconds = time.perf_counter() - start
    img = Image.open(io.BytesIO(data))
    size = f"{img.width} x {img.height}, {len(data) / 1e6:.1f} MB"
    print(f"\n10^5 x 2*10^3 PNG: {seconds:.2f} s, {size}")
    assert seconds < 10.0
    assert img.height < 2400 + 200
