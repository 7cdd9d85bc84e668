"""SequenceBatch.from_input on every accepted input form; codes, lengths, padding, case."""

import gzip
import io
import sys
import types
from pathlib import Path

import pytest
import torch
from Bio import SeqIO
from Bio.Align import MultipleSeqAlignment, PairwiseAligner
from Bio.Seq import Seq
from Bio.SeqRecord import SeqRecord

from torchmsa.alphabet import DNA, PROTEIN, RNA
from torchmsa.errors import (
    AlphabetError,
    ArgumentError,
    DeviceError,
    EmptyInputError,
    InvalidCharacterError,
)
from torchmsa.sequences import Record, SequenceBatch, as_records

DATA = Path(__file__).parent / "data"
NAMES = ["alpha", "beta", "gamma", "delta"]
SEQS = ["MKVla-AG", "", "mkv*UOBZJX", "W.W"]


def check_batch(batch: SequenceBatch, names: list[str], seqs: list[str], alphabet) -> None:
    """Compare every field with a plain-Python encoding of ``seqs``."""
    residues = [s.replace("-", "").replace(".", "") for s in seqs]
    lmax = max(len(r) for r in residues)
    assert batch.names == names
    assert batch.residues == residues  # case kept, gaps gone
    assert batch.alphabet is alphabet
    assert batch.codes.dtype == torch.uint8 and batch.lengths.dtype == torch.int32
    assert tuple(batch.codes.shape) == (len(seqs), lmax)
    assert batch.lengths.tolist() == [len(r) for r in residues]
    for row, res in zip(batch.codes.tolist(), residues):
        expected = [alphabet.letters.index(c.upper()) for c in res]
        assert row == expected + [alphabet.gap_code] * (lmax - len(res))
    assert len(batch) == len(seqs)


def test_list_of_strings():
    batch = SequenceBatch.from_input(SEQS)
    check_batch(batch, [f"seq{i + 1}" for i in range(len(SEQS))], SEQS, PROTEIN)
    assert batch.descriptions == batch.names


def test_dict():
    batch = SequenceBatch.from_input(dict(zip(NAMES, SEQS)))
    check_batch(batch, NAMES, SEQS, PROTEIN)


def test_tuples_records_and_generators():
    check_batch(SequenceBatch.from_input(list(zip(NAMES, SEQS))), NAMES, SEQS, PROTEIN)
    check_batch(SequenceBatch.from_input(zip(NAMES, SEQS)), NAMES, SEQS, PROTEIN)
    records = [Record(n, f"{n} some text", s) for n, s in zip(NAMES, SEQS)]
    batch = SequenceBatch.from_input(records)
    check_batch(batch, NAMES, SEQS, PROTEIN)
    assert batch.descriptions == [f"{n} some text" for n in NAMES]
    with_seq = SequenceBatch.from_input([Record("r", "r", Seq("MkV"))])
    check_batch(with_seq, ["r"], ["MkV"], PROTEIN)


def test_seqrecords_and_their_descriptions():
    records = [
        SeqRecord(Seq(SEQS[0]), id="alpha", description="alpha first"),
        SeqRecord(Seq(SEQS[1]), id="beta", description="not repeating the id"),
        SeqRecord(Seq(SEQS[2]), id="gamma"),  # Biopython's "<unknown description>"
        SeqRecord(Seq(SEQS[3]), id="delta", description=""),
    ]
    batch = SequenceBatch.from_input(records)
    check_batch(batch, NAMES, SEQS, PROTEIN)
    assert batch.descriptions == ["alpha first", "beta not repeating the id", "gamma", "delta"]
    single = SequenceBatch.from_input(records[0])
    check_batch(single, ["alpha"], SEQS[:1], PROTEIN)


def test_biopython_alignments_give_their_sequences():
    rows = ["MKV-LA", "MK-ALA"]
    msa = MultipleSeqAlignment([SeqRecord(Seq(r), id=n) for n, r in zip(["a", "b"], rows)])
    check_batch(SequenceBatch.from_input(msa), ["a", "b"], rows, PROTEIN)
    aligner = PairwiseAligner()
    pair = aligner.align(SeqRecord(Seq("ACGTT"), id="x"), SeqRecord(Seq("ACTT"), id="y"))[0]
    check_batch(SequenceBatch.from_input(pair), ["x", "y"], ["ACGTT", "ACTT"], DNA)


@pytest.mark.parametrize("as_path", [str, Path], ids=["str", "Path"])
def test_path(as_path):
    path = DATA / "small.fasta"
    oracle = list(SeqIO.parse(path, "fasta"))
    batch = SequenceBatch.from_input(as_path(path))
    check_batch(batch, [r.id for r in oracle], [str(r.seq) for r in oracle], PROTEIN)
    assert batch.descriptions == [r.description for r in oracle]


def test_gzip_path_stdin_and_handle(tmp_path, monkeypatch):
    path = tmp_path / "seqs.fa.gz"
    path.write_bytes(gzip.compress(b">a\nacgt\n>b\nAC-GN\n"))
    check_batch(SequenceBatch.from_input(path), ["a", "b"], ["acgt", "AC-GN"], DNA)
    stdin = types.SimpleNamespace(buffer=io.BytesIO(b">r\nACGU\n"), isatty=lambda: False)
    monkeypatch.setattr(sys, "stdin", stdin)
    check_batch(SequenceBatch.from_input("-"), ["r"], ["ACGU"], RNA)
    check_batch(SequenceBatch.from_input(io.StringIO(">h\nMKV\n")), ["h"], ["MKV"], PROTEIN)


def test_sequence_batch_input():
    batch = SequenceBatch.from_input(dict(zip(NAMES, SEQS)))
    assert SequenceBatch.from_input(batch) is batch
    assert SequenceBatch.from_input(batch, seqtype="protein") is batch
    again = SequenceBatch.from_input(
        SequenceBatch.from_input({"a": "ACGT", "b": "AcGN"}), "protein"
    )
    check_batch(again, ["a", "b"], ["ACGT", "AcGN"], PROTEIN)
    assert as_records(batch) == [
        Record(n, d, r) for n, d, r in zip(batch.names, batch.descriptions, batch.residues)
    ]


def test_seqtype():
    check_batch(
        SequenceBatch.from_input(["ACGT", "acgu"], seqtype="rna"),
        ["seq1", "seq2"],
        ["ACGT", "acgu"],
        RNA,
    )
    check_batch(SequenceBatch.from_input(["ACGT"], seqtype="AUTO"), ["seq1"], ["ACGT"], DNA)
    check_batch(SequenceBatch.from_input(["ACGT"], seqtype=PROTEIN), ["seq1"], ["ACGT"], PROTEIN)
    with pytest.raises(AlphabetError, match="seqtype"):
        SequenceBatch.from_input(["ACGT"], seqtype="peptide")


def test_duplicate_names_and_empty_sequences():
    batch = SequenceBatch.from_input([("x", "MKV"), ("x", ""), ("y", "")])
    check_batch(batch, ["x", "x", "y"], ["MKV", "", ""], PROTEIN)
    empty = SequenceBatch.from_input(["", "--"])
    check_batch(empty, ["seq1", "seq2"], ["", "--"], PROTEIN)
    assert tuple(empty.codes.shape) == (2, 0)


def test_invalid_character_names_the_sequence():
    with pytest.raises(InvalidCharacterError) as info:
        SequenceBatch.from_input({"a": "ACGTACGTACGTACGT", "b": "AC-GTX"})
    err = info.value
    assert (err.name, err.index, err.position, err.character, err.alphabet) == (
        "b",
        1,
        6,
        "X",
        "dna",
    )
    assert "\n" not in str(err)


@pytest.mark.parametrize(
    "seqs, words",
    [
        (42, "Invalid value for `seqs`"),
        (b">a\nAC\n", "Invalid value for `seqs`"),
        ([["A", "C"]], "Invalid item #1"),
        ([("a", "AC", "x")], "Invalid item #1"),
        ({"a": None}, "'a' is a NoneType"),
        ([("a", 5)], "'a' is a int"),
        (Seq("MKV"), "single Bio.Seq"),
        ([SeqRecord(Seq(None, length=3), id="u")], "undefined"),
    ],
)
def test_wrong_input_types(seqs, words):
    with pytest.raises(ArgumentError, match=words) as info:
        SequenceBatch.from_input(seqs)
    assert isinstance(info.value, ValueError) and "\n" not in str(info.value)


def test_empty_input():
    for seqs in ([], {}, iter([])):
        with pytest.raises(EmptyInputError, match="no sequences"):
            SequenceBatch.from_input(seqs)


def test_to_device_cpu():
    batch = SequenceBatch.from_input(SEQS)
    assert batch.device == torch.device("cpu")
    for device in ("cpu", torch.device("cpu"), "auto" if not torch.cuda.is_available() else "cpu"):
        moved = batch.to(device)
        assert moved.device == torch.device("cpu")
        assert torch.equal(moved.codes, batch.codes) and torch.equal(moved.lengths, batch.lengths)
        assert moved.residues == batch.residues and moved.names == batch.names
    check_batch(SequenceBatch.from_input(SEQS, device="cpu"), batch.names, SEQS, PROTEIN)
    assert "n=4" in repr(batch) and "'protein'" in repr(batch)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU error")
def test_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(DeviceError, match="no CUDA GPU"):
        SequenceBatch.from_input(["MKV"], device="cuda")
    with pytest.raises(ArgumentError, match="device"):
        SequenceBatch.from_input(["MKV"]).to("gpu0")


def test_direct_construction_is_checked():
    ok = SequenceBatch.from_input(["MKV", "M"])
    with pytest.raises(ArgumentError, match="uint8"):
        SequenceBatch(ok.names, ok.descriptions, ok.residues, ok.codes.long(), ok.lengths, PROTEIN)
    with pytest.raises(ArgumentError, match="int32"):
        SequenceBatch(ok.names, ok.descriptions, ok.residues, ok.codes, ok.lengths[:1], PROTEIN)
    with pytest.raises(ArgumentError, match="descriptions"):
        SequenceBatch(ok.names, ["a"], ok.residues, ok.codes, ok.lengths, PROTEIN)
