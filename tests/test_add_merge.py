"""``torchmsa.addmerge``: add keeps every reference column, keep_length drops insertions,
fragments get free end gaps, batching never changes a result; merge keeps both inputs'
columns as blocks; and the Triton DP path (interpreted on CI) equals the numba one."""

from __future__ import annotations

import random

import pytest
import torch

import torchmsa
from torchmsa.addmerge import add, merge
from torchmsa.addmerge.place import place_paths
from torchmsa.config import ExecutionPolicy, MemoryBudget
from torchmsa.constants import OP_LEFT, OP_MATCH, OP_UP
from torchmsa.errors import ArgumentError, FormatError, ResourceError

AA = "ACDEFGHIKLMNPQRSTVWY"


def _family(seed: int, n: int, length: int, mutate: float = 0.25) -> dict[str, str]:
    rng = random.Random(seed)
    root = "".join(rng.choice(AA) for _ in range(length))
    out = {}
    for i in range(n):
        s = []
        for c in root:
            r = rng.random()
            if r < mutate / 3:
                continue  # deletion
            s.append(rng.choice(AA) if r < mutate else c)
            if rng.random() < mutate / 6:
                s.append(rng.choice(AA))  # insertion
        out[f"s{i}"] = "".join(s)
    return out


def _strip_columns(rows: list[str]) -> list[str]:
    """Rows without the columns that are gaps in all of them."""
    keep = [j for j in range(len(rows[0])) if any(r[j] != "-" for r in rows)]
    return ["".join(r[j] for j in keep) for r in rows]


@pytest.fixture(scope="module")
def split():
    fam = _family(1, 14, 60)
    names = list(fam)
    ref = torchmsa.align({k: fam[k] for k in names[:8]}, device="cpu", mode="fast")
    return ref, {k: fam[k] for k in names[8:]}


def test_add_hand_case():
    out = add({"a": "MKV-LAAG", "b": "MKVQLA-G"}, {"c": "MKVQLAAG"}, device="cpu")
    assert out.rows == ["MKV-LAAG", "MKVQLA-G", "MKVQLAAG"]
    assert out.names == ["a", "b", "c"] and out.metadata["mode"] == "add"


def test_add_keeps_reference_rows(split):
    ref, new = split
    out = add(ref, new, device="cpu")
    n = len(ref)
    assert out.width >= ref.width
    assert _strip_columns(out.rows[:n]) == _strip_columns(ref.rows)
    # reference columns stay in order: the reference rows with the added columns removed
    added = [j for j in range(out.width) if all(r[j] == "-" for r in out.rows[:n])]
    assert len(added) == out.width - ref.width
    kept = [j for j in range(out.width) if j not in set(added)]
    assert ["".join(r[j] for j in kept) for r in out.rows[:n]] == ref.rows
    assert [r.replace("-", "") for r in out.rows[n:]] == list(new.values())


def test_keep_length_drops_insertions(split):
    ref, new = split
    out = add(ref, new, device="cpu", keep_length=True)
    assert out.width == ref.width
    assert out.rows[: len(ref)] == ref.rows
    full = add(ref, new, device="cpu")
    n = len(ref)
    ref_cols = [j for j in range(full.width) if any(r[j] != "-" for r in full.rows[:n])]
    assert [("".join(r[j] for j in ref_cols)) for r in full.rows[n:]] == out.rows[n:]


def test_fragment_lands_on_its_source_columns():
    ref = torchmsa.align(_family(3, 6, 80, mutate=0.1), device="cpu", mode="fast")
    row = ref.rows[2]
    cols = [j for j, c in enumerate(row) if c != "-"]
    frag = "".join(row[j] for j in cols[30:45])
    out = add(ref, {"frag": frag}, device="cpu", fragments=True)
    assert out.width == ref.width
    assert [j for j, c in enumerate(out.rows[-1]) if c != "-"] == cols[30:45]


@pytest.mark.parametrize(
    "policy,budget",
    [
        (ExecutionPolicy(max_batch_cells=1), None),
        (ExecutionPolicy(max_batch_cells=2000), None),
        (None, MemoryBudget(host_bytes=200_000)),
    ],
    ids=["one-per-batch", "small-batches", "small-budget"],
)
def test_batching_never_changes_add(split, policy, budget):
    ref, new = split
    whole = add(ref, new, device="cpu")
    parts = add(ref, new, device="cpu", policy=policy, budget=budget)
    assert parts.rows == whole.rows


def test_add_takes_files_and_pairs(split, tmp_path):
    ref, new = split
    path = tmp_path / "ref.fasta"
    ref.write(str(path))
    pairs = list(zip(ref.names, ref.rows))
    # a file or pairs carry no tree: weights from a tree of the rows' distances
    assert add(str(path), new, device="cpu").rows == add(pairs, new, device="cpu").rows


def test_add_errors():
    with pytest.raises(FormatError, match="rows differ in length"):
        add({"a": "MKV", "b": "MK"}, {"c": "MK"}, device="cpu")
    with pytest.raises(ArgumentError, match="no sequences"):
        add({"a": "MKV"}, [], device="cpu")
    with pytest.raises(ArgumentError, match="`alignment`"):
        add(42, {"c": "MK"}, device="cpu")


def test_add_too_large_for_the_budget(split):
    ref, new = split
    with pytest.raises(ResourceError, match="reference columns"):
        add(ref, new, device="cpu", budget=MemoryBudget(host_bytes=1000))


def test_place_paths_by_hand():
    # reference of 3 columns; path: insert, match, up, insert, insert, match
    ops = torch.tensor([OP_LEFT, OP_MATCH, OP_UP, OP_LEFT, OP_LEFT, OP_MATCH], dtype=torch.uint8)
    p = place_paths(ops, torch.tensor([0]), torch.tensor([6]), torch.tensor([7]), 3)
    assert p.seq.tolist() == [7] * 5
    assert p.col.tolist() == [-1, 0, -1, -1, 2]
    assert p.bnd.tolist() == [0, -1, 2, 2, -1]
    assert p.rank.tolist() == [0, 0, 0, 1, 0]
    assert p.run.tolist() == [1, 0, 2, 2, 0]


def test_merge_keeps_both_blocks(split):
    ref, new = split
    other = torchmsa.align(new, device="cpu", mode="fast")
    out = merge(ref, other, device="cpu")
    n = len(ref)
    assert _strip_columns(out.rows[:n]) == _strip_columns(ref.rows)
    assert _strip_columns(out.rows[n:]) == _strip_columns(other.rows)
    assert out.names == ref.names + other.names and out.metadata["mode"] == "merge"


def test_merge_with_itself_pairs_every_column(split):
    ref, _ = split
    copy = [(f"c_{n}", r) for n, r in zip(ref.names, ref.rows)]
    out = merge(ref, copy, device="cpu")
    assert out.width == len(_strip_columns(ref.rows)[0])
    assert out.rows[: len(ref)] == out.rows[len(ref) :]


@pytest.mark.interpreter
def test_triton_add_equals_cpu(split, device):
    ref, new = split
    small = dict(list(new.items())[:2])
    cpu = add(ref, small, device="cpu", backend="cpu")
    tri = add(ref, small, device=device, backend="triton")
    assert tri.rows == cpu.rows


def _merge_inputs(ref, other):
    """Codes, integer weights and scoring of a merge of two alignments (as ``merge`` makes)."""
    from torchmsa.addmerge.msa import as_msa, encode_msa, shared_alphabet
    from torchmsa.pipeline.accurate import local_scoring
    from torchmsa.pipeline.scoring import profile_scoring

    ma, mb = as_msa(ref, "a"), as_msa(other, "b")
    alphabet = shared_alphabet("auto", [ma, mb])
    a = encode_msa(ma, alphabet, torch.device("cpu"))
    b = encode_msa(mb, alphabet, torch.device("cpu"))
    w_a = torch.full((len(ma),), 1000, dtype=torch.int64)
    w_b = torch.full((len(mb),), 1000, dtype=torch.int64)
    scoring = profile_scoring(alphabet, None, offset=0)
    return a, b, w_a, w_b, scoring, alphabet, local_scoring(alphabet)


def test_ungapped_by_hand():
    from torchmsa.addmerge.merge import ungapped

    g = 9
    codes = torch.tensor([[1, g, 2, g], [g, g, g, 3], [g, g, g, g]], dtype=torch.uint8)
    seqs, lengths = ungapped(codes, g)
    assert seqs.tolist() == [[1, 2], [3, g], [g, g]]
    assert lengths.tolist() == [2, 1, 0]


def test_cross_library_pairs_a_with_b_only(split):
    from torchmsa.addmerge.merge import cross_library, side_by_side

    ref, new = split
    other = torchmsa.align(new, device="cpu", mode="fast")
    a, b, _, _, _, alphabet, local = _merge_inputs(ref, other)
    both = side_by_side(a.codes, b.codes, alphabet.gap_code)
    lib = cross_library(both, len(ref), local, "cpu")
    assert len(lib) > 0
    assert bool((lib.x < len(ref)).all()) and bool((lib.y >= len(ref)).all())
    # each entry pairs residues that exist in its two sequences
    lengths = torch.tensor([len(r) for r in a.residues + b.residues])
    assert bool((lib.i < lengths[lib.x]).all()) and bool((lib.j < lengths[lib.y]).all())


def test_consistency_merge_keeps_both_blocks(split):
    from torchmsa.addmerge.merge import merge_codes

    ref, new = split
    other = torchmsa.align(dict(list(new.items())[::-1]), device="cpu", mode="fast")
    a, b, w_a, w_b, scoring, alphabet, local = _merge_inputs(ref, other)
    args = (a.codes, w_a, b.codes, w_b, scoring, alphabet.gap_code, alphabet.size, "cpu")
    codes = merge_codes(*args, local=local)
    gap = alphabet.gap_code
    n = len(ref)
    res = codes != gap
    # each input row's residues, in order, in the merged row; A's and B's columns as blocks
    for k, text in enumerate(a.residues + b.residues):
        assert int(res[k].sum()) == len(text)
    for block, enc in ((codes[:n], a.codes), (codes[n:], b.codes)):
        live = (block != gap).any(0)
        kept = enc[:, (enc != gap).any(0)]
        assert torch.equal(block[:, live], kept)
    # a tiny batch budget gives the same merge
    small = merge_codes(*args, local=local, policy=ExecutionPolicy(max_batch_cells=64))
    assert torch.equal(small, codes)


@pytest.mark.interpreter
def test_triton_consistency_merge_equals_cpu(split, device):
    from torchmsa.addmerge.merge import merge_codes

    ref, new = split
    other = torchmsa.align(dict(list(new.items())[:3]), device="cpu", mode="fast")
    a, b, w_a, w_b, scoring, alphabet, local = _merge_inputs(ref, other)
    cpu = merge_codes(
        a.codes, w_a, b.codes, w_b, scoring, alphabet.gap_code, alphabet.size, "cpu", local=local
    )
    dev = torch.device(device)
    tri = merge_codes(
        a.codes.to(dev),
        w_a,
        b.codes.to(dev),
        w_b,
        scoring,
        alphabet.gap_code,
        alphabet.size,
        "triton",
        local=local,
    )
    assert torch.equal(tri.cpu(), cpu)
