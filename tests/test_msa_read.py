"""Alignment.read / from_rows / to: existing MSAs, A3M insertions as AlphaFold's deletion
matrix, round trips through every format, and every tensor method on the result."""

from __future__ import annotations

import gzip
import io
import random
import subprocess
import sys

import numpy as np
import pytest
import torch

from tests.feature_oracles import parse_a3m, stockholm_deletions
from torchmsa.alignment import Alignment
from torchmsa.errors import ArgumentError, FormatError, InvalidCharacterError
from torchmsa.io import read_alignment

HAS_CUDA = torch.cuda.is_available()
UPPER = "ACDEFGHIKLMNPQRSTVWY"


def random_a3m(rng: random.Random, n: int, width: int, dots: bool = False) -> list[str]:
    """A3M rows: ``width`` match states (residue or '-') with lowercase runs anywhere."""
    rows = []
    for i in range(n):
        parts = []
        for _ in range(width + 1):
            if i and rng.random() < 0.3:
                parts.append("".join(rng.choice(UPPER).lower() for _ in range(rng.randint(1, 4))))
            parts.append("M")  # placeholder for a match state
        parts.pop()
        out = []
        for p in parts:
            if p == "M":
                out.append(rng.choice(UPPER) if i == 0 or rng.random() > 0.25 else "-")
            else:
                out.append(p)
        row = "".join(out)
        if dots:
            row = "".join(c + ("." if c.islower() and rng.random() < 0.5 else "") for c in row)
        rows.append(row)
    return rows


def a3m_text(rows: list[str]) -> str:
    return "".join(f">s{i} sequence {i}\n{r}\n" for i, r in enumerate(rows))


def test_a3m_by_hand():
    text = ">q query\nMKVLA\n>h\nMKaaVL-\n>g\n-KVLAc\n>f\nabMKVLA\n"
    aln = Alignment.read(io.StringIO(text), "a3m")
    assert aln.rows == ["MKVLA", "MKVL-", "-KVLA", "MKVLA"]
    assert aln.names == ["q", "h", "g", "f"] and aln.descriptions[0] == "q query"
    assert aln.deletion_matrix().tolist() == [
        [0, 0, 0, 0, 0],
        [0, 0, 2, 0, 0],
        [0, 0, 0, 0, 0],
        [2, 0, 0, 0, 0],
    ]
    assert aln.deletion_matrix().dtype == torch.int32
    # relative to row 1 (a gap in its last column): that column's residues become insertions
    # of no later residue, and the stored insertions stay before their columns
    assert aln.deletion_matrix(1).tolist() == [
        [0, 0, 0, 0],
        [0, 0, 2, 0],
        [0, 0, 0, 0],
        [2, 0, 0, 0],
    ]
    assert aln.format("a3m") == ">q query\nMKVLA\n>h\nMKaaVL-\n>g\n-KVLAc\n>f\nabMKVLA\n"


@pytest.mark.parametrize("seed", range(6))
def test_random_a3m_matches_alphafold_parse(seed, tmp_path):
    rng = random.Random(seed)
    rows = random_a3m(rng, rng.randint(1, 12), rng.randint(0, 30))
    seqs, deletions = parse_a3m(rows)
    path = tmp_path / "x.a3m"
    path.write_text(a3m_text(rows))
    for source in (path, io.StringIO(a3m_text(rows))):
        aln = Alignment.read(source, None if source is path else "a3m")
        assert aln.rows == seqs
        assert aln.deletion_matrix().tolist() == deletions
    gz = tmp_path / "x.a3m.gz"
    gz.write_bytes(gzip.compress(a3m_text(rows).encode()))
    assert Alignment.read(gz).deletion_matrix().tolist() == deletions
    with open(gz, "rb") as fh:  # a binary handle named .a3m.gz: guessed from its name
        assert Alignment.read(fh).deletion_matrix().tolist() == deletions


def test_a2m_dots_are_insert_gaps():
    rows = random_a3m(random.Random(7), 8, 20, dots=True)
    assert any("." in r for r in rows)
    width = max(len(r) for r in rows)
    aln = Alignment.read(io.StringIO(a3m_text(rows)), "a2m")
    seqs, deletions = parse_a3m([r.replace(".", "") for r in rows])
    assert aln.rows == seqs and aln.deletion_matrix().tolist() == deletions
    assert width > aln.width


def test_a3m_header_and_hhsuite_rows(tmp_path):
    aln = Alignment.read("tests/data/small.a3m")
    assert aln.names == ["query", "hit1", "hit2"]
    assert aln.rows == ["MKVLA", "MKVL-", "-KVLA"]
    assert aln.deletion_matrix().tolist() == [[0] * 5, [0, 0, 2, 0, 0], [0] * 5]


@pytest.mark.parametrize("fmt", ["fasta", "clustal", "stockholm", "phylip"])
def test_round_trip_plain_formats(fmt):
    rng = random.Random(3)
    rows = ["".join(rng.choice(UPPER + "--") for _ in range(37)) for _ in range(6)]
    aln = Alignment.from_rows([f"seq{i}" for i in range(6)], rows)
    handle = io.StringIO()
    aln.write(handle, fmt)
    back = Alignment.read(io.StringIO(handle.getvalue()), fmt)
    assert back.names == aln.names and back.rows == aln.rows
    assert torch.equal(back.codes, aln.codes)
    assert torch.equal(back.deletion_matrix(), aln.deletion_matrix())
    guessed = Alignment.read(io.StringIO(handle.getvalue()))
    assert torch.equal(guessed.codes, aln.codes)


def test_round_trip_a3m():
    rows = random_a3m(random.Random(11), 9, 25)
    aln = Alignment.read(io.StringIO(a3m_text(rows)), "a3m")
    for fmt in ("a3m", "fasta"):
        handle = io.StringIO()
        aln.write(handle, fmt)
        back = Alignment.read(io.StringIO(handle.getvalue()), fmt)
        assert torch.equal(back.codes, aln.codes)
        expected = aln.deletion_matrix() if fmt == "a3m" else torch.zeros_like(back.codes)
        assert torch.equal(back.deletion_matrix().int(), expected.int())
    # an alignment torchmsa holds as plain rows: A3M relative to its first row
    plain = Alignment.from_rows(["q", "a", "b"], ["AC--DE", "A-GHD-", "-CG-DE"])
    back = Alignment.read(io.StringIO(plain.a3m()), "a3m")
    assert torch.equal(back.codes, plain.codes[:, plain.codes[0] != 27])
    assert torch.equal(back.deletion_matrix(), plain.deletion_matrix(0))


def test_stockholm_deletions_match_alphafold_parse_stockholm():
    rng = random.Random(5)
    rows = ["".join(rng.choice(UPPER + "---") for _ in range(40)) for _ in range(8)]
    aln = Alignment.from_rows([f"s{i}" for i in range(8)], rows)
    handle = io.StringIO()
    aln.write(handle, "stockholm")
    back = Alignment.read(io.StringIO(handle.getvalue()))
    assert back.metadata["format"] == "stockholm"
    assert back.deletion_matrix().tolist() == stockholm_deletions(rows)
    sto = Alignment.read("tests/data/small.sto")
    assert sto.rows == [r.seq for r in read_alignment("tests/data/small.sto")]


def test_tensor_methods_on_a_read_alignment():
    rows = random_a3m(random.Random(2), 7, 15)
    aln = Alignment.read(io.StringIO(a3m_text(rows)), "a3m")
    n, c = len(aln), aln.width
    gaps = torch.tensor([[ch == "-" for ch in r] for r in aln.rows])
    assert torch.equal(aln.gap_mask(), gaps)
    hot = aln.one_hot()
    assert hot.shape == (n, c, 28) and torch.equal(hot.argmax(-1), aln.codes.long())
    prof = aln.profile()
    assert torch.allclose(prof.sum(-1), torch.ones(c))
    assert torch.allclose(prof[:, 27], gaps.float().mean(0))
    assert torch.equal(aln.weights, torch.ones(n, dtype=torch.float64))
    assert aln.a3m() == a3m_text(rows)
    sub = aln.subset([2, 0])
    assert sub.names == [aln.names[2], aln.names[0]]
    assert torch.equal(sub.deletion_matrix(), aln.deletion_matrix()[[2, 0]])
    assert sub.a3m() == f">s2 sequence 2\n{rows[2]}\n>s0 sequence 0\n{rows[0]}\n"


def test_from_rows_checks():
    with pytest.raises(ArgumentError, match="'b' has 3 columns"):
        Alignment.from_rows(["a", "b"], ["ACDE", "ACD"])
    with pytest.raises(InvalidCharacterError, match="'b'"):
        Alignment.from_rows(["a", "b"], ["ACDE", "AC1E"])
    with pytest.raises(ArgumentError, match="deletion_matrix"):
        Alignment.from_rows(["a"], ["ACDE"], deletion_matrix=[[0, 1]])
    with pytest.raises(ArgumentError, match="negative"):
        Alignment.from_rows(["a"], ["AC"], deletion_matrix=[[0, -1]])
    with pytest.raises(ArgumentError, match="names"):
        Alignment.from_rows(["a"], ["AC", "AD"])
    aln = Alignment.from_rows(["a", "b"], ["ac-gt", "ACG.T"], deletion_matrix=np.ones((2, 5), int))
    assert aln.alphabet.name == "dna" and aln.rows == ["ac-gt", "ACG-T"]
    assert aln.deletion_matrix().tolist() == [[1] * 5] * 2


def test_damaged_a3m_names_the_row():
    with pytest.raises(FormatError, match="'h' has 4 match columns"):
        Alignment.read(io.StringIO(">q\nMKVLA\n>h\nMKaV-\n"), "a3m")


def test_to_keeps_every_method_working():
    aln = Alignment.read(io.StringIO(a3m_text(random_a3m(random.Random(4), 5, 10))), "a3m")
    moved = aln.to("cpu")
    assert moved is not aln and moved.codes.device.type == "cpu"
    assert torch.equal(moved.deletion_matrix(), aln.deletion_matrix())


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
def test_methods_on_cuda_equal_cpu():
    aln = Alignment.read(io.StringIO(a3m_text(random_a3m(random.Random(8), 30, 40))), "a3m")
    gpu = aln.to("cuda")
    assert gpu.codes.is_cuda and gpu.deletion_matrix().is_cuda
    for name in ("gap_mask", "one_hot", "profile", "deletion_matrix", "identity", "pssm"):
        a, b = getattr(aln, name)(), getattr(gpu, name)()
        assert torch.allclose(a.double(), b.cpu().double()), name
    assert torch.equal(aln.deletion_matrix(1), gpu.deletion_matrix(1).cpu())
    assert torch.equal(aln.sequence_weights(0.8), gpu.sequence_weights(0.8).cpu())
    assert gpu.a3m() == aln.a3m() and gpu.rows == aln.rows
    fa, fb = aln.alphafold_features(max_clusters=8), gpu.alphafold_features(max_clusters=8)
    for key in fa:
        assert torch.allclose(fa[key].double(), fb[key].cpu().double()), key


def test_read_from_stdin():
    code = (
        "from torchmsa.alignment import Alignment; a = Alignment.read('-', 'a3m'); "
        "print(a.rows, a.deletion_matrix().tolist())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=">q\nMKV\n>h\nMaaKV\n", capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    assert out.stdout.strip() == "['MKV', 'MKV'] [[0, 0, 0], [0, 2, 0]]"
