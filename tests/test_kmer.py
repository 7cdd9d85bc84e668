"""Shared k-mer counts and distances against brute-force counting in plain Python."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
import torch

from torchmsa.alphabet import DNA, PROTEIN
from torchmsa.cpu import kmer as cpu_kmer
from torchmsa.errors import AlphabetError, ArgumentError, DeviceError, InvalidCharacterError
from torchmsa.ops.kmer import (
    kmer_distance_matrix,
    kmer_distances,
    kmer_ids,
    reduced_map,
    shared_kmer_counts,
)
from torchmsa.sequences import SequenceBatch

DAYHOFF = {
    c: g for g, letters in enumerate(["AGPST", "C", "DENQ", "FWY", "HKR", "ILMV"]) for c in letters
}
ACGT = {"A": 0, "C": 1, "G": 2, "T": 3, "U": 3}
PROTEIN_LETTERS = "ACDEFGHIKLMNPQRSTVWY" * 3 + "XB*ZJUOacdkw"
DNA_LETTERS = "ACGT" * 4 + "UNRYacgtu"


def kmers(seq: str, k: int, groups: dict[str, int]) -> Counter:
    """Brute force: every window of k letters, all of them in a counted group."""
    seq = seq.upper()
    out = Counter()
    for p in range(len(seq) - k + 1):
        window = seq[p : p + k]
        if all(c in groups for c in window):
            out[tuple(groups[c] for c in window)] += 1
    return out


def brute_counts(a: list[str], b: list[str], k: int, groups) -> np.ndarray:
    ca, cb = [kmers(s, k, groups) for s in a], [kmers(s, k, groups) for s in b]
    return np.array([[sum((x & y).values()) for y in cb] for x in ca], dtype=np.int32)


def random_seqs(rng, n: int, letters: str, max_len: int) -> list[str]:
    # a shared ancestor makes many k-mers shared; lengths include 0 .. k + 2
    base = "".join(rng.choice(list(letters), max_len))
    out = []
    for i in range(n):
        length = int(rng.integers(0, max_len + 1))
        s = list(base[:length])
        for p in rng.integers(0, max(length, 1), length // 4):
            if p < length:
                s[p] = str(rng.choice(list(letters)))
        out.append("".join(s) if i % 3 else "".join(s[: i % 9]))
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 6])
def test_protein_counts_match_brute_force(k):
    rng = np.random.default_rng(k)
    a = random_seqs(rng, 30, PROTEIN_LETTERS, 40) + ["X" * 10, "ACDEF*GHIKL", "AAAAAAAAAA"]
    b = random_seqs(rng, 7, PROTEIN_LETTERS, 25)
    got = shared_kmer_counts(a, k=k, device="cpu")
    assert got.dtype == torch.int32 and got.device.type == "cpu"
    np.testing.assert_array_equal(got.numpy(), brute_counts(a, a, k, DAYHOFF))
    cross = shared_kmer_counts(a, b, k=k, device="cpu")
    np.testing.assert_array_equal(cross.numpy(), brute_counts(a, b, k, DAYHOFF))


@pytest.mark.parametrize("alphabet", ["acgt", "dayhoff6"])
@pytest.mark.parametrize("k", [1, 4, 6])
def test_nucleotide_counts_match_brute_force(alphabet, k):
    # "dayhoff6" falls back to ACGT for input detected as DNA/RNA
    rng = np.random.default_rng(10 + k)
    a = random_seqs(rng, 25, DNA_LETTERS, 30) + ["ACGUACGTACGT", "NNNNNNNN", "ACGTNACGTACG"]
    b = random_seqs(rng, 5, DNA_LETTERS, 30)
    got = shared_kmer_counts(a, b, k=k, alphabet=alphabet, device="cpu")
    np.testing.assert_array_equal(got.numpy(), brute_counts(a, b, k, ACGT))


def test_protein_that_looks_like_dna_via_batch():
    seqs = ["ACGTACGTAC", "ACGTTCGTAC", "GATTACA"]
    batch = SequenceBatch.from_input(seqs, seqtype="protein")
    got = shared_kmer_counts(batch, k=3, device="cpu")
    np.testing.assert_array_equal(got.numpy(), brute_counts(seqs, seqs, 3, DAYHOFF))
    with pytest.raises(AlphabetError, match="dayhoff6"):
        shared_kmer_counts(batch, k=3, alphabet="acgt")


def test_batch_input_equals_list_input_and_symmetric_equals_cross():
    rng = np.random.default_rng(0)
    seqs = random_seqs(rng, 40, PROTEIN_LETTERS, 60)
    by_list = shared_kmer_counts(seqs, device="cpu")
    batch = SequenceBatch.from_input(seqs, seqtype="protein")
    assert torch.equal(shared_kmer_counts(batch, device="cpu"), by_list)
    assert torch.equal(shared_kmer_counts(batch, seqs, device="cpu", backend="cpu"), by_list)
    assert torch.equal(by_list, by_list.T)


def test_merge_path_equals_table_path():
    rng = np.random.default_rng(1)
    seqs = random_seqs(rng, 30, PROTEIN_LETTERS, 50)
    table = shared_kmer_counts(seqs, k=4, device="cpu")
    batch = SequenceBatch.from_input(seqs, seqtype="protein")
    ids, n = kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), 4)
    assert torch.equal(cpu_kmer.shared_counts(ids, n, table_limit=0), table)
    assert torch.equal(cpu_kmer.shared_counts(ids, n, ids, n, table_limit=0), table)
    p, q = torch.arange(30).repeat_interleave(30), torch.arange(30).repeat(30)
    merged = cpu_kmer.pair_counts(ids, n, ids, n, p, q, table_limit=0)
    assert torch.equal(merged.view(30, 30), table)
    np.testing.assert_array_equal(table.numpy(), brute_counts(seqs, seqs, 4, DAYHOFF))


def test_kmer_ids_are_sorted_ids_of_brute_force_kmers():
    rng = np.random.default_rng(2)
    seqs = random_seqs(rng, 20, PROTEIN_LETTERS, 30)
    batch = SequenceBatch.from_input(seqs, seqtype="protein")
    ids, n = kmer_ids(batch.codes, batch.lengths, reduced_map(PROTEIN), 3)
    assert ids.dtype == torch.int32 and ids.shape == (20, batch.codes.shape[1] - 2)
    for s, seq in enumerate(seqs):
        want = sorted(
            g[0] * 36 + g[1] * 6 + g[2] for g, c in kmers(seq, 3, DAYHOFF).items() for _ in range(c)
        )
        assert ids[s, : n[s]].tolist() == want
        assert (ids[s, n[s] :] == cpu_kmer.PAD).all()


def test_reduced_maps():
    prot, dna = reduced_map(PROTEIN).tolist(), reduced_map(DNA).tolist()
    assert len(prot) == PROTEIN.size + 1 and prot[PROTEIN.gap_code] == 255
    assert len(dna) == DNA.size + 1 and dna[DNA.gap_code] == 255
    for code, letter in enumerate(PROTEIN.letters):
        assert prot[code] == DAYHOFF.get(letter, 255), letter
    for code, letter in enumerate(DNA.letters):
        assert dna[code] == ACGT.get(letter, 255), letter


def test_distances_formula_and_short_sequences():
    # fragment of the first, unrelated, shorter than k, empty
    seqs = ["MKVLAAGIVGLLLAQPAMA", "MKVLAAGIVG", "WWWWWWCCCCCCHHHH", "MKV", ""]
    counts = shared_kmer_counts(seqs, device="cpu")
    self_counts = counts.diagonal()
    d = kmer_distances(counts, self_counts)
    assert d.dtype == torch.float64 and not torch.isnan(d).any()
    for i in range(5):
        for j in range(5):
            smaller = min(int(self_counts[i]), int(self_counts[j]))
            want = 1.0 if smaller == 0 else 1.0 - int(counts[i, j]) / smaller
            assert d[i, j].item() == want
    assert d[0, 1] == 0.0  # a fragment is at distance 0
    assert d[3, 3] == 1.0 and d[4, 0] == 1.0  # no k-mers: distance 1, itself included
    full = kmer_distance_matrix(seqs, device="cpu")
    assert torch.equal(full.diagonal(), torch.zeros(5, dtype=torch.float64))
    off = ~torch.eye(5, dtype=torch.bool)
    assert torch.equal(full[off], d[off])


def test_distances_cross_shapes():
    counts = torch.tensor([[3, 0], [1, 2]], dtype=torch.int32)
    d = kmer_distances(counts, torch.tensor([4, 2]), np.array([3, 0]))
    assert d.tolist() == [[0.0, 1.0], [0.5, 1.0]]
    with pytest.raises(ArgumentError, match="self_b"):
        kmer_distances(counts, torch.tensor([4, 2]), torch.tensor([1, 2, 3]))
    with pytest.raises(ArgumentError, match="integer"):
        kmer_distances(counts.double(), torch.tensor([4, 2]))


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"k": 0}, ArgumentError, "`k`"),
        ({"k": 2.5}, ArgumentError, "`k`"),
        ({"k": True}, ArgumentError, "`k`"),
        ({"k": 12}, ArgumentError, "`k`"),
        ({"alphabet": "murphy10"}, ArgumentError, "`alphabet`"),
        ({"backend": "gpu"}, ArgumentError, "`backend`"),
        ({"device": "tpu"}, ArgumentError, "`device`"),
    ],
)
def test_argument_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        shared_kmer_counts(["MKVLAAGIVG", "MKVLA"], **kwargs)


def test_triton_backend_on_cpu_needs_the_interpreter(monkeypatch):
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    with pytest.raises(DeviceError, match="interpreter"):
        shared_kmer_counts(["MKVLAAGIVG", "MKVLA"], backend="triton", device="cpu")


def test_input_errors():
    with pytest.raises(InvalidCharacterError):
        shared_kmer_counts(["MKV1A"])
    dna = SequenceBatch.from_input(["ACGTACGT"], seqtype="dna")
    with pytest.raises(AlphabetError):
        shared_kmer_counts(dna, SequenceBatch.from_input(["MKVLWW"]))
    with pytest.raises(InvalidCharacterError, match="'L'"):  # read with the batch's alphabet
        shared_kmer_counts(dna, ["MKVLWW"])


def test_launcher_checks_its_tensors():
    reduced = reduced_map(PROTEIN)
    with pytest.raises(ArgumentError, match="lengths"):
        cpu_kmer.kmer_ids(torch.zeros(2, 5, dtype=torch.uint8), torch.tensor([6, 1]), reduced, 3)
    with pytest.raises(ArgumentError, match="reduced map"):
        cpu_kmer.kmer_ids(torch.full((1, 5), 40, dtype=torch.uint8), torch.tensor([5]), reduced, 3)
    with pytest.raises(ArgumentError, match="len_b"):
        ids = torch.zeros(2, 3, dtype=torch.int32)
        cpu_kmer.shared_counts(ids, torch.tensor([1, 1]), ids, torch.tensor([1, 4]))
