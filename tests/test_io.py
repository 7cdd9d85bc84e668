"""Reading and writing sequence and alignment files; Biopython is the oracle for the formats."""

import gzip
import io
import random
import sys
import types
from pathlib import Path

import pytest
from Bio import Align, AlignIO, SeqIO

from torchmsa import io as tio
from torchmsa.errors import ArgumentError, EmptyInputError, FormatError, TorchMSAError

DATA = Path(__file__).parent / "data"


def one_line(err: BaseException) -> str:
    msg = str(err)
    assert msg and "\n" not in msg, msg
    return msg


def biopython_fasta(path: Path) -> list[tuple[str, str, str]]:
    return [(r.id, r.description, str(r.seq)) for r in SeqIO.parse(path, "fasta")]


def as_tuples(records) -> list[tuple[str, str, str]]:
    return [(r.name, r.description, r.seq) for r in records]


def fake_stdin(monkeypatch, data: bytes) -> None:
    stdin = types.SimpleNamespace(buffer=io.BytesIO(data), isatty=lambda: False)
    monkeypatch.setattr(sys, "stdin", stdin)


# reading: FASTA and its byte-level variants


def test_fasta_matches_biopython_with_case_stop_empty_and_duplicate_names():
    records = tio.read_sequences(DATA / "small.fasta")
    assert as_tuples(records) == biopython_fasta(DATA / "small.fasta")
    names = [r.name for r in records]
    assert names.count("seq2") == 2 and records[2].seq == ""
    assert records[1].seq.startswith("mvls")


@pytest.mark.parametrize("seed", range(4))
def test_fasta_reader_matches_biopython_on_awkward_text(tmp_path, seed):
    """The reader's own FASTA parser against Biopython's on headers with tabs, trailing and
    non-breaking spaces, empty and bare ``>`` headers, and sequence lines holding spaces,
    tabs, form feeds, ``;`` and ``>`` inside."""
    rng = random.Random(seed)
    heads = ["a", "a b", "a\tb  ", "", " lead", "x\u00a0y\u2003", "dup", "dup", ">>z", "q ;c"]
    lines = ["ACGT", "ac gt", "\tMKV\t", "", "   ", "M;K", "A>C", "K\x0cV", "W\x0bY", "*"]
    parts = []
    for _ in range(40):
        parts.append(">" + rng.choice(heads))
        parts += [rng.choice(lines) for _ in range(rng.randrange(4))]
    text = "\n".join(parts) + rng.choice(["", "\n", "\n\n"])
    path = tmp_path / "x.fasta"
    path.write_text(text, encoding="utf-8")
    want = [(r.id, r.description, str(r.seq)) for r in SeqIO.parse(io.StringIO(text), "fasta")]
    records = tio.read_sequences(path)
    # Biopython strips trailing whitespace from descriptions; we keep header lines whole
    assert [(n, d.rstrip(), s) for n, d, s in as_tuples(records)] == want
    heads = [line[1:] for line in text.split("\n") if line.startswith(">")]
    assert [r.description for r in records] == heads


@pytest.mark.parametrize("seed", range(6))
def test_two_line_records_are_read_as_the_general_split_reads_them(monkeypatch, seed):
    """Files of one header line and one sequence line per record take one split at line
    ends; the records equal the general parser's, and text that is not of that shape (a
    wrapped sequence, an empty record, a blank line between records, a sequence line that
    starts with '>') goes the general way."""
    from torchmsa.io import read as tread

    rng = random.Random(seed)
    heads = ["a", "a b", "a\tb  ", "", ">>z", "q ;c", "dup", "dup"]
    seqs = ["ACGT", "ac gt", "\tMKV\t", "", "M;K", "A>C", "*", "W Y"]
    records = [(rng.choice(heads), rng.choice(seqs)) for _ in range(30)]
    text = "".join(f">{h}\n{q}\n" for h, q in records)
    text = text[:-1] if seed % 2 else text  # with and without the final line end

    def general(text: str) -> list:
        with monkeypatch.context() as m:
            m.setattr(tread, "_two_line_records", lambda t, h=None: (None, None))
            return as_tuples(tread._fasta_records(text))

    want = general(text)
    assert tread._two_line_records(text)[0] is not None
    assert as_tuples(tread._fasta_records(text)) == want
    assert len(want) == 30
    for other in (
        text.replace("\n", "\nMK\n", 1),  # a sequence in two lines
        ">e\n" + text,  # an empty record first
        text.replace("\n>", "\n\n>", 1),  # a blank line between records
        text + "\n\n",  # blank lines at the end
        ">a\n>b\n",  # a sequence line that is a header
    ):
        assert tread._two_line_records(other) == (None, None), other
        assert as_tuples(tread._fasta_records(other)) == general(other)


def test_non_ascii_residue_is_named_not_a_decoding_crash(tmp_path):
    from torchmsa.errors import InvalidCharacterError
    from torchmsa.sequences import SequenceBatch

    path = tmp_path / "x.fasta"
    path.write_text(">a d\nMKé\n>b\nMKV\n", encoding="utf-8")
    assert tio.read_sequences(path)[0].seq == "MKé"
    with pytest.raises(InvalidCharacterError, match="é") as err:
        SequenceBatch.from_input(path)
    assert "'a'" in one_line(err.value) and "position 3" in str(err.value)


@pytest.mark.parametrize("ending", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_crlf_and_cr_line_ends(tmp_path, ending):
    text = (DATA / "small.fasta").read_text()
    path = tmp_path / "x.fasta"
    path.write_bytes(("\n\n" + text + "\n\n").replace("\n", ending).encode())
    assert as_tuples(tio.read_sequences(path)) == biopython_fasta(DATA / "small.fasta")


def test_blank_lines_and_byte_order_mark(tmp_path):
    path = tmp_path / "x.fa"
    path.write_bytes(b"\xef\xbb\xbf\n  \n>a d\n\nAC\n\nGT\n\n>b\n\n")
    assert as_tuples(tio.read_sequences(path)) == [("a", "a d", "ACGT"), ("b", "b", "")]


@pytest.mark.parametrize("name", ["x.fasta.gz", "x.fasta", "no_extension"])
def test_gzip_is_detected_by_magic_bytes(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(gzip.compress((DATA / "small.fasta").read_bytes()))
    assert as_tuples(tio.read_sequences(path)) == biopython_fasta(DATA / "small.fasta")


def test_gzipped_stockholm_is_recognised_by_content(tmp_path):
    path = tmp_path / "alignment.gz"
    path.write_bytes(gzip.compress((DATA / "small.sto").read_bytes()))
    assert tio.read_alignment(path) == tio.read_alignment(DATA / "small.sto")


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_stdin(monkeypatch, compress):
    data = (DATA / "small.fasta").read_bytes()
    fake_stdin(monkeypatch, gzip.compress(data) if compress else data)
    assert as_tuples(tio.read_sequences("-")) == biopython_fasta(DATA / "small.fasta")


def test_stdin_without_buffer_and_tty_stdin(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO(">a\nAC\n"))
    assert as_tuples(tio.read_sequences("-")) == [("a", "a", "AC")]
    tty = types.SimpleNamespace(buffer=io.BytesIO(b""), isatty=lambda: True)
    monkeypatch.setattr(sys, "stdin", tty)
    with pytest.raises(EmptyInputError, match="standard input") as info:
        tio.read_sequences("-")
    one_line(info.value)


def test_open_handles_text_and_binary():
    expected = biopython_fasta(DATA / "small.fasta")
    with open(DATA / "small.fasta") as fh:
        assert as_tuples(tio.read_sequences(fh)) == expected
    with open(DATA / "small.fasta", "rb") as fh:
        assert as_tuples(tio.read_sequences(fh)) == expected
    assert as_tuples(tio.read_sequences(io.StringIO(">a\nAC\n"))) == [("a", "a", "AC")]


# reading: the other formats


def test_stockholm_matches_biopython_and_keeps_descriptions():
    records = tio.read_alignment(DATA / "small.sto")
    oracle = AlignIO.read(DATA / "small.sto", "stockholm")
    assert [r.name for r in records] == [r.id for r in oracle]
    assert [r.seq for r in records] == [str(r.seq) for r in oracle]
    assert records[0].description == "P1/1-9 Protein one, first of two"
    assert records[1].description == "P2/3-9"


def test_clustal_matches_biopython():
    records = tio.read_alignment(DATA / "small.aln")
    oracle = AlignIO.read(DATA / "small.aln", "clustal")
    assert [(r.name, r.seq) for r in records] == [(r.id, str(r.seq)) for r in oracle]
    assert records[1].seq.endswith("s")  # case kept


def test_a3m_sequences_skip_hhsuite_rows_and_comment_lines():
    records = tio.read_sequences(DATA / "small.a3m")
    assert [r.name for r in records] == ["query", "hit1", "hit2"]
    assert records[0].description == "query first sequence"
    assert [r.seq for r in records] == ["MKVLA", "MKaaVL-", "-KVLAc"]


def test_a3m_alignment_expands_insert_columns():
    # worked by hand: 'aa' after column 2 of hit1 and 'c' after column 5 of hit2 become
    # insert columns; every other row gets gaps there
    rows = [r.seq for r in tio.read_alignment(DATA / "small.a3m")]
    assert rows == ["MK--VLA-", "MKaaVL--", "-K--VLAc"]


def test_a3m_with_unequal_match_columns_is_refused(tmp_path):
    path = tmp_path / "bad.a3m"
    path.write_text(">q\nMKV\n>h\nMKvL\n>h2\nMK\n")
    with pytest.raises(FormatError, match="'h2' has 2 match columns") as info:
        tio.read_alignment(path)
    one_line(info.value)


def test_a2m_alignment_matches_biopython_and_keeps_case(tmp_path):
    path = tmp_path / "x.a2m"
    path.write_text(">q desc\nMK.VL\n>h\nMKaVL\n>g\n-K.V-\n")
    records = tio.read_alignment(path)
    oracle = Align.read(path, "a2m")
    assert [r.name for r in records] == [s.id for s in oracle.sequences]
    assert [r.seq.upper() for r in records] == list(oracle)
    assert records[1].seq == "MKaVL"


def test_phylip_is_read(tmp_path):
    path = tmp_path / "x.phy"
    path.write_text(" 2 6\nlong_name_number_one ACG-TA\nb            AC-GTA\n")
    assert [(r.name, r.seq) for r in tio.read_alignment(path)] == [
        (r.id, str(r.seq)) for r in AlignIO.read(path, "phylip-relaxed")
    ]


@pytest.mark.parametrize(
    "text, fmt",
    [
        ("# STOCKHOLM 1.0\na AC\n//\n", "stockholm"),
        ("\n\nCLUSTAL W (1.83)\n\na AC\n", "clustal"),
        ("MUSCLE (3.8) multiple sequence alignment\n\na AC\n", "clustal"),
        (" 2 5\na ACGTA\n", "phylip"),
        (">a\nAC\n", "fasta"),
        ("#A3M#\n>a\nAC\n", "a3m"),
    ],
)
def test_guess_format_from_content_beats_the_name(text, fmt):
    assert tio.guess_format("file.fasta", text) == fmt


@pytest.mark.parametrize(
    "name, fmt",
    [("x.a3m", "a3m"), ("x.a2m.gz", "a2m"), ("x.sto", "stockholm"), ("x.ALN", "clustal")],
)
def test_guess_format_from_the_name(name, fmt):
    assert tio.guess_format(name) == fmt
    if fmt in ("a2m", "a3m"):
        assert tio.guess_format(name, ">q\nAC\n") == fmt
    assert tio.guess_format("<stdin>", "") == "fasta"


def test_stockholm_file_with_two_alignments(tmp_path):
    path = tmp_path / "two.sto"
    path.write_text("# STOCKHOLM 1.0\na AC\nb AG\n//\n# STOCKHOLM 1.0\nc AC\nd AG\n//\n")
    assert [r.name for r in tio.read_sequences(path)] == ["a", "b", "c", "d"]
    with pytest.raises(FormatError, match="2 stockholm alignments") as info:
        tio.read_alignment(path)
    one_line(info.value)


# reading: everything a user can get wrong


@pytest.mark.parametrize(
    "content, error, words",
    [
        (b"", EmptyInputError, "is empty"),
        (b"\n \n\n", EmptyInputError, "is empty"),
        (b"some notes\n>a\nAC\n", FormatError, "line 1 ('some notes') comes before the first '>'"),
        (b"\n;comment\n>a\nAC\n", FormatError, "line 2"),
        (b">a\nAC\n>b \xe9\nGT\n", FormatError, "line 3 is not UTF-8"),
        (b">a\nAC\x00GT\n", FormatError, "binary data"),
        (b"\x1f\x8b\x08\x00garbage", FormatError, "damaged gzip"),
        (b"BZh91AY&SY", FormatError, "bzip2-compressed"),
        (b"\xfd7zXZ\x00\x00", FormatError, "xz-compressed"),
        (b"CLUSTAL W (1.83)\n", EmptyInputError, "no alignment after it"),
        (b"CLUSTAL W (1.83)\n\n\n", EmptyInputError, "no alignment after it"),
        (b"CLUSTAL W\n\na AC\n\nCLUSTAL W\n\n", FormatError, "clustal"),
        (b"CLUSTAL W\n\na AC\nb A\n", FormatError, "cannot read it as clustal"),
        (b"CLUSTAL W\n\na AC\nb\n", FormatError, "cannot read it as clustal"),
        (b"# STOCKHOLM 1.0\na AC\nb A\n//\n", FormatError, "cannot read it as stockholm"),
        (b"# STOCKHOLM 1.0\n//\n", EmptyInputError, "no sequences"),
        (b" 2 3\na ACG\n", FormatError, "cannot read it as phylip"),
    ],
)
def test_bad_files(tmp_path, content, error, words):
    path = tmp_path / "input"
    path.write_bytes(content)
    with pytest.raises(error) as info:
        tio.read_sequences(path)
    assert isinstance(info.value, ValueError) and isinstance(info.value, TorchMSAError)
    assert words in one_line(info.value)
    assert "input" in str(info.value)  # names the file


def test_only_headers_gives_empty_sequences(tmp_path):
    path = tmp_path / "headers.fa"
    path.write_text(">a\n>b desc\n>c\n")
    assert as_tuples(tio.read_sequences(path)) == [
        ("a", "a", ""),
        ("b", "b desc", ""),
        ("c", "c", ""),
    ]


def test_missing_file_directory_and_unknown_format(tmp_path):
    with pytest.raises(FormatError, match="no such file") as info:
        tio.read_sequences(tmp_path / "missing.fa")
    one_line(info.value)
    with pytest.raises(FormatError, match="put them in a list"):
        tio.read_sequences("MKVLAAGIVG")
    with pytest.raises(FormatError, match="io.StringIO") as info:
        tio.read_sequences(">a\nMKV\n>b\nMKL\n")
    one_line(info.value)
    with pytest.raises(FormatError, match="File name too long") as info:
        tio.read_sequences("M" * 5000)
    assert len(one_line(info.value)) < 300
    with pytest.raises(FormatError, match="is a directory") as info:
        tio.read_sequences(tmp_path)
    one_line(info.value)
    for bad in ["genbank", "", "fastq"]:
        with pytest.raises(ArgumentError, match="read formats are fasta") as info:
            tio.read_sequences(DATA / "small.fasta", format=bad)
        one_line(info.value)
        with pytest.raises(ArgumentError, match="write formats are fasta"):
            tio.format_alignment(["a"], ["AC"], format=bad)


def test_forced_format_that_does_not_fit():
    with pytest.raises(FormatError, match="cannot read it as stockholm") as info:
        tio.read_sequences(DATA / "small.fasta", format="stockholm")
    one_line(info.value)
    with pytest.raises(FormatError, match="comes before the first '>'"):
        tio.read_sequences(DATA / "small.aln", format="fasta")


def test_unaligned_input_read_as_alignment(tmp_path):
    path = tmp_path / "x.fa"
    path.write_text(">a\nMKVL\n>b\nMKvLAA\n")
    with pytest.raises(FormatError, match="rows differ in length.*format='a3m'") as info:
        tio.read_alignment(path)
    one_line(info.value)


# writing and round trips


def random_alignment(rng: random.Random, n: int, width: int, letters: str):
    rows = []
    for _ in range(n):
        row = "".join(rng.choice(letters + "--") for _ in range(width))
        rows.append("".join(c.lower() if rng.random() < 0.2 else c for c in row))
    names = [f"s{i}_{rng.randrange(10**6)}" for i in range(n)]
    return names, rows


def read_back(text: str, fmt: str, tmp_path: Path):
    path = tmp_path / f"out.{fmt}"
    path.write_text(text)
    return tio.read_alignment(path)


@pytest.mark.parametrize("fmt", ["fasta", "clustal", "stockholm", "phylip"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_round_trip_keeps_names_rows_and_case(tmp_path, fmt, seed):
    rng = random.Random(seed)
    names, rows = random_alignment(rng, rng.randint(1, 7), rng.choice([1, 7, 61, 130]), "ACDEFKW")
    text = tio.format_alignment(names, rows, fmt)
    records = read_back(text, fmt, tmp_path)
    assert [r.name for r in records] == names
    assert [r.seq for r in records] == rows
    if fmt != "fasta":  # the text is what Biopython reads too
        oracle = AlignIO.read(io.StringIO(text), tio.formats.BIOPYTHON[fmt])
        assert [(r.id, str(r.seq)) for r in oracle] == list(zip(names, rows))


def test_round_trip_of_descriptions_through_fasta_and_stockholm(tmp_path):
    names = ["a", "b/2-4", "c"]
    descriptions = ["a the first one", "b/2-4", "not starting with the name"]
    rows = ["AC-D", "ACGD", "-CGD"]
    expected = ["a the first one", "b/2-4", "c not starting with the name"]
    for fmt in ("fasta", "stockholm"):
        records = read_back(tio.format_alignment(names, rows, fmt, descriptions), fmt, tmp_path)
        assert [r.description for r in records] == expected
        assert [r.name for r in records] == names


def test_fasta_round_trip_keeps_duplicates_empty_rows_and_unequal_lengths(tmp_path):
    names, rows = ["x", "x", "y"], ["MkV", "", "m-k--"]
    path = tmp_path / "out.fa"
    tio.write_alignment(names, rows, path)
    records = tio.read_sequences(path)
    assert [(r.name, r.seq) for r in records] == list(zip(names, rows))


def test_dots_are_gaps(tmp_path):
    names, rows = ["a", "b"], ["AC.D", "A-CD"]
    for fmt in ("clustal", "stockholm", "phylip"):
        records = read_back(tio.format_alignment(names, rows, fmt), fmt, tmp_path)
        assert [r.seq for r in records] == ["AC-D", "A-CD"]


def check_a3m(rows: list[str], a3m: list[str], query: int) -> None:
    """A3M invariants: one upper-case letter or '-' per query residue, no residue lost."""
    match = [c not in "-." for c in rows[query]]
    for row, out in zip(rows, a3m):
        assert [c for c in out if c.isupper() or c == "-"] == [
            c.upper() if c not in "-." else "-" for c, m in zip(row, match) if m
        ]
        assert [c for c in out if c.islower()] == [
            c.lower() for c, m in zip(row, match) if not m and c not in "-."
        ]
        assert out.replace("-", "").upper() == row.replace("-", "").replace(".", "").upper()


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_a3m_round_trip(tmp_path, seed):
    rng = random.Random(seed)
    names, rows = random_alignment(rng, rng.randint(1, 6), rng.randint(1, 40), "ACDEFKW")
    query = rng.randrange(len(rows))
    text = tio.format_alignment(names, rows, "a3m", query=query)
    a3m = [r.seq for r in SeqIO.parse(io.StringIO(text), "fasta")]
    check_a3m(rows, a3m, query)
    records = tio.read_alignment(io.StringIO(text), format="a3m")
    assert [r.name for r in records] == names
    back = [r.seq for r in records]
    assert len({len(r) for r in back}) == 1
    assert tio.a3m_rows(back, query) == a3m  # A3M -> alignment -> A3M is the identity


def test_a3m_rows_by_hand():
    # query columns 1, 3, 4 are match columns; column 2 is an insert column
    assert tio.a3m_rows(["A-CD", "AKC-", "-k.D"]) == ["ACD", "AkC-", "-k-D"]


def test_clustal_name_limit():
    ok = "n" * 30
    assert ok in tio.format_alignment([ok, "b"], ["AC", "AG"], "clustal")
    with pytest.raises(FormatError, match="up to 30 characters") as info:
        tio.format_alignment(["n" * 31, "b"], ["AC", "AG"], "clustal")
    one_line(info.value)
    with pytest.raises(FormatError, match="header"):
        tio.format_alignment(["CLUSTAL", "b"], ["AC", "AG"], "clustal")


def test_phylip_is_relaxed_but_refuses_names_it_would_change():
    long = "a_very_long_sequence_name_well_past_ten_characters"
    assert long in tio.format_alignment([long, "b"], ["AC", "AG"], "phylip")
    for bad in ["a:b", "a(b)", "x,y", "p;q", "[z]"]:
        with pytest.raises(FormatError, match="phylip cannot hold") as info:
            tio.format_alignment([bad, "b"], ["AC", "AG"], "phylip")
        one_line(info.value)


@pytest.mark.parametrize("fmt", ["clustal", "stockholm", "phylip"])
def test_names_the_id_only_formats_cannot_hold(fmt):
    for bad in ["", "two words", "tab\there"]:
        with pytest.raises(FormatError, match=fmt) as info:
            tio.format_alignment([bad, "b"], ["AC", "AG"], fmt)
        one_line(info.value)


@pytest.mark.parametrize("fmt", ["stockholm", "phylip"])
def test_duplicate_names_refused_where_they_must_be_unique(fmt):
    with pytest.raises(FormatError, match="occurs twice"):
        tio.format_alignment(["a", "a"], ["AC", "AG"], fmt)


def test_clustal_keeps_duplicate_names(tmp_path):
    records = read_back(
        tio.format_alignment(["a", "a"], ["AC", "AG"], "clustal"), "clustal", tmp_path
    )
    assert [(r.name, r.seq) for r in records] == [("a", "AC"), ("a", "AG")]


def test_stockholm_markup_names_refused():
    for bad in ["#=GC", "//"]:
        with pytest.raises(FormatError, match="markup"):
            tio.format_alignment([bad, "b"], ["AC", "AG"], "stockholm")


@pytest.mark.parametrize("fmt", tio.WRITE_FORMATS)
def test_line_breaks_in_names_or_descriptions_refused(fmt):
    with pytest.raises(FormatError, match="line break"):
        tio.format_alignment(["a\nb", "c"], ["AC", "AG"], fmt)
    with pytest.raises(FormatError, match="line break"):
        tio.format_alignment(["a", "c"], ["AC", "AG"], fmt, descriptions=["a x\r", "c"])


def test_argument_mismatches():
    with pytest.raises(ArgumentError, match="2 names for 1 rows"):
        tio.format_alignment(["a", "b"], ["AC"])
    with pytest.raises(ArgumentError, match="1 descriptions for 2 rows"):
        tio.format_alignment(["a", "b"], ["AC", "AG"], descriptions=["a"])
    with pytest.raises(EmptyInputError):
        tio.format_alignment([], [], "clustal")
    with pytest.raises(ArgumentError, match="query"):
        tio.format_alignment(["a", "b"], ["AC", "AG"], "a3m", query=2)
    for fmt in ("clustal", "stockholm", "phylip", "a3m"):
        with pytest.raises(FormatError, match="rows differ in length"):
            tio.format_alignment(["a", "b"], ["AC", "A"], fmt)


@pytest.mark.parametrize("fmt", ["clustal", "stockholm", "phylip"])
def test_zero_columns(fmt):
    with pytest.raises(FormatError, match="0 columns"):
        tio.format_alignment(["a", "b"], ["", ""], fmt)
    assert tio.format_alignment(["a", "b"], ["", ""], "fasta") == ">a\n\n>b\n\n"


def test_write_targets(tmp_path, capsys):
    names, rows = ["a", "b"], ["AC-", "A-G"]
    text = tio.format_alignment(names, rows, "fasta")
    tio.write_alignment(names, rows, tmp_path / "x.fa")
    assert (tmp_path / "x.fa").read_text() == text
    tio.write_alignment(names, rows, str(tmp_path / "x.fa.gz"))
    first = (tmp_path / "x.fa.gz").read_bytes()
    assert gzip.decompress(first).decode() == text
    tio.write_alignment(names, rows, tmp_path / "x.fa.gz")
    assert (tmp_path / "x.fa.gz").read_bytes() == first  # no time stamp: reproducible
    assert tio.read_alignment(tmp_path / "x.fa.gz") == tio.read_alignment(tmp_path / "x.fa")
    tio.write_alignment(names, rows, "-")
    assert capsys.readouterr().out == text
    handle = io.StringIO()
    tio.write_alignment(names, rows, handle, "clustal")
    assert handle.getvalue() == tio.format_alignment(names, rows, "clustal")
    raw = io.BytesIO()
    tio.write_alignment(names, rows, raw)
    assert raw.getvalue().decode() == text


def test_write_errors(tmp_path):
    for target in (tmp_path, tmp_path / "missing_dir" / "x.fa"):
        with pytest.raises(FormatError, match="cannot write") as info:
            tio.write_alignment(["a"], ["AC"], target)
        one_line(info.value)


# headers byte for byte; the output format from the name; files replaced whole

ODD_HEADERS = ["x\u00a0y", " leading space", "a\u3000b c", "u\u2028v", "w\u0085z", "t  ", "", " "]


@pytest.mark.parametrize("fmt", ["fasta", "a3m"])
def test_headers_come_out_byte_for_byte(tmp_path, fmt):
    text = "".join(f">{h}\nMKV\n" for h in ODD_HEADERS)
    path = tmp_path / "in.fa"
    path.write_bytes(text.encode("utf-8"))
    records = tio.read_sequences(path)
    assert [r.description for r in records] == ODD_HEADERS
    assert [r.name for r in records] == ["x", "leading", "a", "u", "w", "t", "", ""]
    out = tmp_path / f"out.{fmt}"
    tio.write_alignment(
        [r.name for r in records],
        [r.seq for r in records],
        out,
        fmt,
        [r.description for r in records],
    )
    assert out.read_bytes() == text.encode("utf-8")


@pytest.mark.parametrize("head", ODD_HEADERS[:6] + ["s\tdesc", "s two  spaces"])
def test_stockholm_refuses_headers_it_cannot_hold_naming_the_sequence(head):
    name = head.split()[0]
    with pytest.raises(FormatError, match=f"header of sequence '{name}' exactly") as info:
        tio.format_alignment([name, "b"], ["MK", "MV"], "stockholm", [head, "b"])
    one_line(info.value)
    tio.check_writable([name, "b"], [head, "b"], "fasta")
    with pytest.raises(FormatError, match="header of sequence"):
        tio.check_writable([name, "b"], [head, "b"], "stockholm")


@pytest.mark.parametrize("fmt", ["clustal", "phylip", "stockholm"])
@pytest.mark.parametrize("name", ["a\u3000b", "a\u00a0b", "a\u2028b", "a\u0085b", " a"])
def test_names_with_unicode_whitespace_are_refused(fmt, name):
    with pytest.raises(FormatError, match="empty or with spaces"):
        tio.format_alignment([name, "b"], ["MK", "MV"], fmt)


def test_header_rule_is_biopythons():
    from torchmsa.records import NO_DESCRIPTION, header

    assert header("x", "x\u00a0y") == "x\u00a0y"
    assert header("lead", " lead sp") == " lead sp"
    assert header("x", "desc  ") == "x desc"
    assert header("x", "xy desc") == "x xy desc"
    assert header("x", NO_DESCRIPTION) == header("x", "") == "x"
    assert header("", " ") == " "


@pytest.mark.parametrize(
    "target, fmt",
    [
        ("x.aln", "clustal"),
        ("d/x.STO.gz", "stockholm"),
        ("x.a3m", "a3m"),
        ("x.phy", "phylip"),
        ("x.a2m", "fasta"),
        ("x.unknown", "fasta"),
        ("-", "fasta"),
        (io.StringIO(), "fasta"),
    ],
)
def test_output_format_from_the_name(target, fmt):
    assert tio.output_format(target) == fmt
    assert tio.output_format(target, "aln") == "clustal"
    with pytest.raises(ArgumentError, match="write formats"):
        tio.output_format(target, "a2m")


def test_write_alignment_takes_the_format_from_the_name(tmp_path):
    tio.write_alignment(["a", "b"], ["AC-", "A-G"], tmp_path / "x.aln")
    assert (tmp_path / "x.aln").read_text().startswith("CLUSTAL")
    tio.write_alignment(["a", "b"], ["AC-", "A-G"], tmp_path / "x.aln", "fasta")
    assert (tmp_path / "x.aln").read_text().startswith(">a")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    out = tmp_path / "x.aln"
    out.write_text("old")
    out.chmod(0o640)
    with pytest.raises(FormatError, match="clustal holds names"):
        tio.write_alignment(["n" * 40, "b"], ["AC", "AG"], out)
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["x.aln"]
    tio.write_alignment(["a", "b"], ["AC", "AG"], out)
    assert out.read_text().startswith("CLUSTAL") and out.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.aln"]


def test_write_file_follows_links_and_writes_devices(tmp_path):
    real, link = tmp_path / "real.fa", tmp_path / "link.fa"
    real.write_text("old")
    link.symlink_to(real)
    tio.write_file(link, b">a\nAC\n")
    assert link.is_symlink() and real.read_bytes() == b">a\nAC\n"
    tio.write_file("/dev/null", b">a\nAC\n")
    with pytest.raises(OSError):
        tio.write_file(tmp_path / "missing" / "x.fa", b"")


def test_input_may_be_the_output(tmp_path):
    path = tmp_path / "x.fa"
    path.write_text(">a d\nMKV\n>b\nMK\n")
    records = tio.read_sequences(path)
    tio.write_alignment(
        [r.name for r in records], ["MKV", "MK-"], path, None, [r.description for r in records]
    )
    assert path.read_text() == ">a d\nMKV\n>b\nMK-\n"


def test_input_limits_are_checked():
    assert tio.InputLimits().max_input_bytes == 4 * 2**30
    for bad in (0, -1, 1.5, True, "1"):
        with pytest.raises(ArgumentError, match="max_sequences"):
            tio.InputLimits(max_sequences=bad)
    with pytest.raises(TypeError):
        tio.InputLimits(10)  # keyword-only


@pytest.mark.parametrize(
    "content, words",
    [
        (gzip.compress(b">a\nAC\n") + b"\x00" * 5 + gzip.compress(b">b\nGT\n"), None),
        (gzip.compress(b">a\nAC\n") + b"junk", "data after the end"),
        (gzip.compress(b">a\nAC\n" * 100)[:-9], "ends before the end"),
        (gzip.compress(b"BZh91AY&SY"), "bzip2-compressed inside gzip"),
        (gzip.compress(b">a\nA\x00C\n"), "NUL byte on line 2"),
    ],
)
def test_streamed_gzip(tmp_path, content, words):
    path = tmp_path / "x.fa.gz"
    path.write_bytes(content)
    if words is None:
        assert [r.seq for r in tio.read_sequences(path)] == ["AC", "GT"]
    else:
        with pytest.raises(FormatError, match=words) as info:
            tio.read_sequences(path)
        one_line(info.value)


def test_names_holding_unicode_whitespace_keep_their_header(tmp_path):
    path = tmp_path / "x.sto"
    path.write_text("# STOCKHOLM 1.0\nr5\u00a0_77 MK-V\nb MKLV\n//\n", encoding="utf-8")
    records = tio.read_sequences(path)
    assert [r.name for r in records] == [r.description for r in records] == ["r5\u00a0_77", "b"]
    text = tio.format_alignment(
        ["r5\u00a0_77", "b"], ["MK-V", "MKLV"], "fasta", ["r5\u00a0_77", "b"]
    )
    assert text == ">r5\u00a0_77\nMK-V\n>b\nMKLV\n"


def test_a3m_refuses_residues_without_lower_case_in_insert_columns():
    assert tio.format_alignment(["a", "b"], ["M*V", "MKV"], "a3m") == ">a\nM*V\n>b\nMKV\n"
    with pytest.raises(FormatError, match="'\\*' of sequence 'b' in an insert column") as info:
        tio.format_alignment(["a", "b"], ["M-V", "M*V"], "a3m")
    one_line(info.value)
    assert tio.format_alignment(["a", "b"], ["M-V", "M*V"], "a3m", query=1) == ">a\nM-V\n>b\nM*V\n"
