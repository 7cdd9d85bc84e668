"""Generators of bad, odd and mutated sequence files for ``tests/test_fuzz.py`` (issue #43).

Every generator takes a ``random.Random`` and returns a :class:`Case`: the file's bytes, the
file name's ending, and, where the generator knows them (valid inputs it wrote itself), the
records the file holds, so that the test does not take them from the reader it checks.
"""

from __future__ import annotations

import gzip
import random
from dataclasses import dataclass

PROTEIN = "ACDEFGHIKLMNPQRSTVWY"
DNA = "ACGT"
# whitespace that str.split() splits on but a FASTA line does not end at
ODD_SPACE = ["\u00a0", "\u3000", "\u2028", "\u0085", "\u2003", "\t", "\x0b", "\x0c", " "]
ODD_NAME = ["é", "名前", "🧬", "\u200f", "a\u0301", ">", ";", "|", "/", "[x]", "#", "//", "'"]


@dataclass(frozen=True)
class Case:
    """One fuzz input.

    Attributes:
        id: readable case id (generator and seed).
        data: the file's bytes.
        suffix: the file name's ending (``.fasta``, ``.sto``, ``.aln.gz``, ...).
        records: ``(name, header, residues)`` per sequence when known, else ``None``;
            ``header`` is the whole header line a FASTA output must carry.
    """

    id: str
    data: bytes
    suffix: str = ".fasta"
    records: tuple[tuple[str, str, str], ...] | None = None


def _seq(rng: random.Random, alphabet: str, lo: int = 1, hi: int = 60) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(lo, hi)))


def _family(rng: random.Random, n: int, alphabet: str, hi: int = 50) -> list[str]:
    """``n`` related sequences: one ancestor with point changes and indels."""
    root = _seq(rng, alphabet, 8, hi)
    out = []
    for _ in range(n):
        s = list(root)
        for _ in range(rng.randint(0, 4)):
            k = rng.randrange(len(s) + 1)
            op = rng.random()
            if op < 0.4 and s:
                s[min(k, len(s) - 1)] = rng.choice(alphabet)
            elif op < 0.7:
                s.insert(k, rng.choice(alphabet))
            elif s:
                del s[min(k, len(s) - 1)]
        out.append("".join(s))
    return out


def _name(rng: random.Random, k: int) -> str:
    return rng.choice(["seq", "sp|P0", "tr|Q9", "x", "UniRef90_A"]) + str(k)


def _fasta(heads: list[str], seqs: list[str], rng: random.Random, wrap=True) -> str:
    out = []
    for h, s in zip(heads, seqs):
        out.append(">" + h)
        width = rng.choice([60, 10, 1000]) if wrap else 1000
        out += [s[i : i + width] for i in range(0, len(s), width)] or [""]
    return "\n".join(out) + "\n"


def _known(heads: list[str], seqs: list[str]) -> tuple:
    return tuple(
        (h.split(None, 1)[0] if h.split() else "", h, s.replace("-", "").replace(".", ""))
        for h, s in zip(heads, seqs)
    )


def valid_fasta(rng: random.Random) -> Case:
    """Plain, lower-case, gapped, wrapped FASTA of protein, DNA or RNA, CRLF or a BOM."""
    alphabet = rng.choice([PROTEIN, PROTEIN.lower(), DNA, "ACGU", PROTEIN + "XBZ*"])
    seqs = _family(rng, rng.randint(1, 7), alphabet)
    if rng.random() < 0.3:
        seqs = [s[:3] + "-." + s[3:] for s in seqs]
    heads = [
        f"{_name(rng, k)} {rng.choice(['', 'desc', 'OS=Homo sapiens'])}".rstrip()
        for k in range(len(seqs))
    ]
    text = _fasta(heads, seqs, rng)
    if rng.random() < 0.3:
        text = text.replace("\n", "\r\n")
    data = text.encode()
    if rng.random() < 0.2:
        data = b"\xef\xbb\xbf" + data
    if rng.random() < 0.2:
        return Case("valid_fasta_gz", gzip.compress(data, mtime=0), ".fa.gz", _known(heads, seqs))
    return Case("valid_fasta", data, ".fasta", _known(heads, seqs))


def odd_headers(rng: random.Random) -> Case:
    """Headers with Unicode whitespace, leading and trailing spaces, odd and long names,
    duplicates and empty headers: each must come out byte for byte."""
    seqs = _family(rng, rng.randint(2, 6), PROTEIN, 30)
    heads = []
    for k in range(len(seqs)):
        kind = rng.randrange(7)
        sp = rng.choice(ODD_SPACE)
        if kind == 0:
            h = f"x{k}{sp}y"
        elif kind == 1:
            h = f"{sp} lead{k} space"
        elif kind == 2:
            h = f"n{k} tail{sp}"
        elif kind == 3:
            h = f"{rng.choice(ODD_NAME)}{k}{rng.choice(ODD_NAME)}"
        elif kind == 4:
            h = "L" * rng.choice([31, 200, 5000])
        elif kind == 5:
            h = rng.choice(["", " ", "dup", "dup"])
        else:
            h = f"p{k}{sp}{sp}d\u00a0e"
        heads.append(h)
    return Case("odd_headers", _fasta(heads, seqs, rng).encode(), ".fasta", _known(heads, seqs))


def identical(rng: random.Random, scale: int = 1) -> Case:
    """Many identical or near-identical sequences (the cheapest input there is)."""
    n = rng.randint(10, 40) * scale
    base = _seq(rng, PROTEIN, 20, 80)
    seqs = [base] * n
    if rng.random() < 0.5:
        k = rng.randrange(n)
        seqs[k] = base[:5] + base[6:]
    heads = [f"s{k}" for k in range(n)]
    return Case("identical", _fasta(heads, seqs, rng).encode(), ".fasta", _known(heads, seqs))


def degenerate(rng: random.Random) -> Case:
    """One sequence, empty sequences, only headers, one residue, very unequal lengths."""
    kind = rng.randrange(6)
    if kind == 0:
        seqs = [_seq(rng, PROTEIN)]
    elif kind == 1:
        seqs = ["", _seq(rng, PROTEIN), ""]
    elif kind == 2:
        seqs = ["", ""]
    elif kind == 3:
        seqs = ["M", "K"]
    elif kind == 4:
        seqs = [_seq(rng, PROTEIN, 300, 600), _seq(rng, PROTEIN, 1, 3)]
    else:
        seqs = ["-", "..", "A"]
    heads = [f"d{k}" for k in range(len(seqs))]
    return Case("degenerate", _fasta(heads, seqs, rng).encode(), ".fasta", _known(heads, seqs))


def bad_content(rng: random.Random) -> Case:
    """Inputs that must be refused (or read) cleanly: wrong characters, binary, encodings,
    compression, damaged gzip, text before the first header, other file types."""
    good = _fasta(["a", "b"], _family(rng, 2, PROTEIN), rng).encode()
    options = [
        ("digits", b">a\nMKV1L\n>b\nMKVL\n"),
        ("symbols", b">a\nMK@VL\n>b\nMK%VL\n"),
        ("accent", ">a\nMKéL\n>b\nMKVL\n".encode()),
        ("control", b">a\nMK\x07VL\n>b\nMKVL\n"),
        ("mixed_alphabets", b">a\nACGTACGT\n>b\nMKVLWWYE\n>c\nACGUACGU\n"),
        ("nul", good[:7] + b"\x00" + good[7:]),
        ("latin1", ">a caf\xe9\nMKV\n".encode("latin-1")),
        ("utf16", good.decode().encode("utf-16")),
        ("bzip2", b"BZh91AY&SY" + bytes(rng.randrange(256) for _ in range(40))),
        ("zstd", b"\x28\xb5\x2f\xfd" + good),
        ("gzip_truncated", gzip.compress(good)[: rng.randint(3, 20)]),
        ("gzip_garbage_tail", gzip.compress(good) + b"garbage"),
        ("gzip_twice", gzip.compress(gzip.compress(good))),
        ("gzip_members", gzip.compress(good) + b"\x00" * 8 + gzip.compress(b">c\nMKV\n")),
        ("empty", b""),
        ("blank", b"\n\n  \n\t\n"),
        ("preamble", b"hello\n" + good),
        ("html", b"<!DOCTYPE html><html><body>Not found</body></html>\n"),
        ("json", b'{"sequences": ["MKV", "MKL"]}\n'),
        ("random_bytes", bytes(rng.randrange(256) for _ in range(rng.randint(1, 300)))),
        ("random_text", bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 300)))),
        ("stockholm_open", b"# STOCKHOLM 1.0\na MKV\nb MKL\n"),
        ("stockholm_ragged", b"# STOCKHOLM 1.0\na MKV\nb MK\n//\n"),
        ("clustal_header_only", b"CLUSTAL W (1.83)\n\n\n"),
        ("clustal_ragged", b"CLUSTAL W\n\na MKV\nb MK\n\n"),
        ("phylip_wrong_count", b"3 4\na MKVL\nb MKVL\n"),
        ("a3m_ragged", b">a\nMKVL\n>b\nMKvvL\n>c\nMK\n"),
        ("header_only", b">\n"),
        ("gaps_only", b">a\n----\n>b\n..\n"),
    ]
    name, data = rng.choice(options)
    suffix = ".fa.gz" if name.startswith("gzip") else rng.choice([".fasta", ".txt", ".a3m", ""])
    return Case(f"bad_{name}", data, suffix)


def _aligned(rng: random.Random, n: int, alphabet: str = PROTEIN) -> tuple[list[str], list[str]]:
    seqs = _family(rng, n, alphabet, 40)
    width = max(len(s) for s in seqs)
    rows = []
    for s in seqs:
        pad = width - len(s)
        left = rng.randint(0, pad)
        rows.append("-" * left + s + "-" * (pad - left))
    return [f"r{k}_{rng.randrange(100)}" for k in range(n)], rows


def valid_stockholm(rng: random.Random) -> Case:
    names, rows = _aligned(rng, rng.randint(2, 6), rng.choice([PROTEIN, PROTEIN + "*X", DNA]))
    lines = ["# STOCKHOLM 1.0", "#=GF ID fam"]
    lines += [f"{n} {r.replace('-', rng.choice('-.'))}" for n, r in zip(names, rows)]
    text = "\n".join(lines) + "\n//\n"
    return Case("valid_stockholm", text.encode(), ".sto", _plain(names, rows))


def valid_clustal(rng: random.Random) -> Case:
    names, rows = _aligned(rng, rng.randint(2, 6), rng.choice([PROTEIN, PROTEIN.lower() + "*"]))
    lines = ["CLUSTAL W (1.83) multiple sequence alignment", "", ""]
    for start in range(0, len(rows[0]), 30):
        lines += [f"{n:<12}{r[start : start + 30]}" for n, r in zip(names, rows)]
        lines += [" " * 12 + "*" * len(rows[0][start : start + 30]), ""]
    return Case("valid_clustal", "\n".join(lines).encode(), ".aln", _plain(names, rows))


def valid_a3m(rng: random.Random) -> Case:
    names, rows = _aligned(rng, rng.randint(2, 6))
    query = rows[0]
    body = []
    for r in rows:
        body.append(
            "".join(
                (c if q != "-" else c.lower()) for c, q in zip(r, query) if q != "-" or c != "-"
            )
        )
    known = tuple((n, n, b.replace("-", "")) for n, b in zip(names, body))
    text = "#A3M\n" + "".join(f">{n}\n{b}\n" for n, b in zip(names, body))
    return Case("valid_a3m", text.encode(), ".a3m", known)


def _plain(names, rows) -> tuple:
    return tuple((n, n, r.replace("-", "")) for n, r in zip(names, rows))


VALID = [valid_fasta, valid_stockholm, valid_clustal, valid_a3m]
PALETTE = [
    b"\n",
    b">",
    b"#",
    b" ",
    b"\t",
    b"\r",
    b"-",
    b".",
    b"*",
    b"//",
    b"\n>",
    b"\n\n",
    b"CLUSTAL",
    b"# STOCKHOLM 1.0\n",
    b"#=GS a DE x\n",
    b"3 4\n",
    b"\x00",
    b"\xff",
    b"\xc3",
    "\u00a0".encode(),
    "\u2028".encode(),
    "\u3000".encode(),
    b"X",
    b"a",
    b"1",
    b"\x1f\x8b",
]


def mutated(rng: random.Random) -> Case:
    """A valid FASTA, Stockholm, Clustal or A3M file with a few random byte-level changes."""
    base = rng.choice(VALID)(rng)
    data = bytearray(base.data if not base.suffix.endswith(".gz") else gzip.decompress(base.data))
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        k = rng.randrange(len(data) + 1)
        if op == 0 and data:
            del data[k : k + rng.randint(1, 8)]
        elif op == 1:
            data[k:k] = rng.choice(PALETTE)
        elif op == 2:
            lines = bytes(data).split(b"\n")
            j = rng.randrange(len(lines))
            lines.insert(j, lines[rng.randrange(len(lines))])
            data = bytearray(b"\n".join(lines))
        elif op == 3:
            lines = bytes(data).split(b"\n")
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
            data = bytearray(b"\n".join(lines))
        elif op == 4:
            data = data[: rng.randrange(len(data) + 1)]
        else:
            data[k : k + 5] = bytes(data[k : k + 5]).swapcase()
    suffix = base.suffix.removesuffix(".gz")
    return Case(f"mutated_{base.id}", bytes(data), rng.choice([suffix, suffix, ".txt"]))


GENERATORS = [
    valid_fasta,
    odd_headers,
    identical,
    degenerate,
    bad_content,
    valid_stockholm,
    valid_clustal,
    valid_a3m,
    mutated,
    mutated,
    mutated,
]


def cases(count: int, seed: int = 43) -> list[Case]:
    """``count`` cases, each from its own seed so that a failing one reruns alone."""
    out = []
    for k in range(count):
        rng = random.Random(seed * 1_000_003 + k)
        case = GENERATORS[k % len(GENERATORS)](rng)
        out.append(Case(f"{case.id}-{k}", case.data, case.suffix, case.records))
    return out
