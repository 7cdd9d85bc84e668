import io
from pathlib import Path

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.alphabet import get_alphabet
from torchmsa.config import AlignConfig, ExecutionPolicy, MemoryBudget, ScoringConfig, TreeConfig
from torchmsa.constants import OCC_SHIFT
from torchmsa.cpu.rules.column_scores import column_scores as numba_column_scores
from torchmsa.cpu.rules.column_scores import column_scores_threaded
from torchmsa.errors import ArgumentError, EmptyInputError, InvalidCharacterError, ScoringError
from torchmsa.io import read_alignment, read_sequences
from torchmsa.metrics import score_alignment
from torchmsa.ops.colscores import batched_column_scores
from torchmsa.ops.rules.column_scores import column_scores
from torchmsa.pipeline import profile_scoring

HERE = Path(__file__).parent
EXAMPLE = HERE.parent / "examples" / "superoxide_dismutase.fasta"
BALIBASE = HERE.parent.parent / "shared" / "benchmarks" / "balibase3"
AMINO = "ARNDCQEGHILKMFPSTWYV"


def _check_valid(aln, records):
    """Names, order, residues (with case) and equal widths; no all-gap column."""
    assert aln.names == [r.name for r in records]
    assert [row.replace("-", "") for row in aln.rows] == [r.seq.replace("-", "") for r in records]
    assert len({len(row) for row in aln.rows}) == 1
    if aln.width and any(r.seq for r in records):
        assert not bool(aln.gap_mask().all(0).any())


def _family(rng, n, length, mutate=0.2):
    root = "".join(rng.choice(list(AMINO), length))
    seqs = []
    for _ in range(n):
        s = [c if rng.random() > mutate else rng.choice(list(AMINO)) for c in root]
        for _ in range(2):
            k = int(rng.integers(0, len(s)))
            if rng.random() < 0.5:
                del s[k : k + int(rng.integers(1, 4))]
            else:
                s[k:k] = list(rng.choice(list(AMINO), int(rng.integers(1, 4))))
        seqs.append("".join(s))
    return seqs


@pytest.mark.parametrize("mode", ["fast", "default"])
def test_example_alignment_is_valid_and_deterministic(mode):
    records = read_sequences(EXAMPLE)
    a1 = torchmsa.align(EXAMPLE, device="cpu", mode=mode)
    a2 = torchmsa.align(EXAMPLE, device="cpu", mode=mode)
    _check_valid(a1, records)
    assert a1.rows == a2.rows
    assert torch.equal(a1.codes, a2.codes)
    assert a1.metadata["mode"] == mode and a1.metadata["device"] == "cpu"


def test_input_forms_give_the_same_alignment():
    records = read_sequences(EXAMPLE)
    by_path = torchmsa.align(str(EXAMPLE), device="cpu", mode="fast")
    by_dict = torchmsa.align({r.name: r.seq for r in records}, device="cpu", mode="fast")
    by_list = torchmsa.align([r.seq for r in records], device="cpu", mode="fast")
    assert by_path.rows == by_dict.rows == by_list.rows
    assert by_list.names == [f"seq{i + 1}" for i in range(len(records))]


def test_case_gaps_empty_and_duplicates_round_trip():
    rng = np.random.default_rng(0)
    seqs = _family(rng, 6, 40)
    seqs[1] = seqs[1].lower()
    seqs[2] = seqs[2][:10] + "--" + seqs[2][10:]
    records = [("x", s) for s in seqs] + [("empty", "")]
    aln = torchmsa.align(records, device="cpu", mode="default")
    assert aln.names == ["x"] * 6 + ["empty"]
    assert [r.replace("-", "") for r in aln.rows] == [s.replace("-", "") for s in seqs] + [""]
    assert aln.rows[1].replace("-", "").islower()
    assert set(aln.rows[-1]) <= {"-"}


def test_tiny_inputs():
    one = torchmsa.align(["MKV"], device="cpu")
    assert one.rows == ["MKV"] and one.tree is None
    two = torchmsa.align(["MKVLA", "MKLA"], device="cpu")
    assert two.rows[0] == "MKVLA" and two.rows[1].replace("-", "") == "MKLA"
    empty = torchmsa.align(["", ""], device="cpu")
    assert empty.rows == ["", ""] and empty.width == 0
    with pytest.raises(EmptyInputError):
        torchmsa.align([], device="cpu")


def test_dna_is_detected_and_aligned():
    rng = np.random.default_rng(1)
    root = "".join(rng.choice(list("ACGT"), 60))
    seqs = [root, root[:20] + root[25:], root[5:] + "ACGT", root.replace("A", "U")]
    aln = torchmsa.align(seqs, device="cpu")
    assert aln.alphabet.name == "dna"
    assert [r.replace("-", "") for r in aln.rows] == seqs


def test_bad_input_and_arguments():
    with pytest.raises(InvalidCharacterError) as err:
        torchmsa.align({"ok": "MKV", "bad": "MK1V"}, device="cpu")
    assert (err.value.name, err.value.position, err.value.character) == ("bad", 3, "1")
    with pytest.raises(ArgumentError):
        torchmsa.align(["MKV", "MKV"], mode="turbo", device="cpu")
    with pytest.raises(ArgumentError):
        torchmsa.align(["MKV", "MKV"], tree="random", device="cpu")
    with pytest.raises(ScoringError):
        torchmsa.align(["MKV", "MKV"], gap_open=1, gap_extend=3, device="cpu")
    with pytest.raises(ScoringError, match="below 32768"):
        torchmsa.align(["MKV", "MKV"], gap_open=40_000, device="cpu")
    with pytest.raises(torchmsa.errors.DeviceError):
        torchmsa.align(["MKV", "MKV"], device="cuda:99")


def _columns(rng, w, size):
    """Profile columns of a profile of weight ``w``: full ones, sparse ones (residue weight
    below the occupancy floor ``w / 2^OCC_SHIFT``), one of a single unit of weight."""
    r = [w, w, int(rng.integers(1, w >> OCC_SHIFT)), 1, int(rng.integers(1, w))][:size]
    return np.stack([rng.multinomial(x, np.ones(27) / 27) for x in r])


def test_column_scores_are_exact_at_the_weight_limit():
    rng = np.random.default_rng(2)
    mat = profile_scoring(get_alphabet("protein")).matrix
    for _ in range(20):
        wa, wb = (int(x) for x in rng.integers(1 << 17, 1 << 19, 2))
        pa = _columns(rng, wa, 5)
        pb = _columns(rng, wb, 4)
        # the whole weight on one residue type, as in a single sequence's columns
        pa[1] = 0
        pa[1, rng.integers(27)] = wa
        pb[0] = 0
        pb[0, rng.integers(27)] = wb
        got = column_scores(
            torch.tensor(pa, dtype=torch.float64),
            torch.tensor(pb, dtype=torch.float64),
            mat.double(),
            wa,
            wb,
        )
        m = mat.tolist()
        da = [min(wa, int(pa[i].sum()) << OCC_SHIFT) for i in range(5)]
        db = [min(wb, int(pb[j].sum()) << OCC_SHIFT) for j in range(4)]
        want = [
            [
                sum(int(pa[i, x]) * m[x][y] * int(pb[j, y]) for x in range(27) for y in range(27))
                // (da[i] * db[j])
                for j in range(4)
            ]
            for i in range(5)
        ]
        assert got.tolist() == want
        # the numba twin (refinement's and small merges' scores), in both orientations of its
        # sparse loops
        mat64 = mat.numpy().astype(np.int64)
        assert numba_column_scores(pa, pb, mat64, wa, wb, OCC_SHIFT).tolist() == want
        assert numba_column_scores(pb, pa, mat64.T.copy(), wb, wa, OCC_SHIFT).T.tolist() == want
        # and its rows spread over threads (a lone refinement edge), both orientations too
        for threads in (1, 3):
            got = column_scores_threaded(pa, pb, mat64, wa, wb, OCC_SHIFT, threads)
            assert got.tolist() == want
            flipped = column_scores_threaded(pb, pa, mat64.T.copy(), wb, wa, OCC_SHIFT, threads)
            assert flipped.T.tolist() == want
        prof = torch.tensor(np.concatenate([pa, pb]), dtype=torch.float64)
        S, s_off = batched_column_scores(
            prof,
            torch.tensor([0, 5]),
            torch.tensor([5, 3]),
            torch.tensor([5, 0]),
            torch.tensor([4, 5]),
            torch.tensor([wa, wb]),
            torch.tensor([wb, wa]),
            mat.double(),
        )
        assert s_off.tolist() == [0, 20]
        assert S[:20].view(5, 4).tolist() == want
        back = column_scores(
            torch.tensor(pb[:3], dtype=torch.float64),
            torch.tensor(pa, dtype=torch.float64),
            mat.double(),
            wb,
            wa,
        )
        assert S[20:].view(3, 5).tolist() == back.tolist()


def test_alignment_tensors_and_formats():
    aln = torchmsa.align(EXAMPLE, device="cpu", mode="fast")
    n, c = len(aln), aln.width
    hot = aln.one_hot()
    assert hot.shape == (n, c, aln.alphabet.size + 1) and torch.all(hot.sum(-1) == 1)
    prof = aln.profile()
    assert prof.shape == (c, aln.alphabet.size + 1)
    assert torch.allclose(prof.sum(-1), torch.ones(c))
    assert torch.equal(aln.gap_mask(), torch.tensor([[ch == "-" for ch in r] for r in aln.rows]))
    for fmt in ("fasta", "clustal", "stockholm", "phylip"):
        handle = io.StringIO()
        aln.write(handle, fmt)
        back = read_alignment(io.StringIO(handle.getvalue()), fmt)
        assert [r.seq for r in back] == aln.rows and [r.name for r in back] == aln.names
    bio = aln.to_biopython()
    assert [str(r.seq) for r in bio] == aln.rows
    assert aln.tree.newick().endswith(";")


def test_a3m_and_deletion_matrix_by_hand():
    from torchmsa.alignment import Alignment
    from torchmsa.alphabet import PROTEIN, encode

    rows = ["AC--DE", "A-GHD-", "-CG-DE"]
    codes = torch.tensor(
        np.stack(
            [
                np.array([PROTEIN.gap_code if ch == "-" else encode(ch, PROTEIN)[0][0] for ch in r])
                for r in rows
            ]
        ),
        dtype=torch.uint8,
    )
    aln = Alignment(
        ["q", "s", "t"], ["q", "s", "t"], [r.replace("-", "") for r in rows], codes, PROTEIN
    )
    assert aln.rows == rows
    assert aln.a3m(0) == ">q\nACDE\n>s\nA-ghD-\n>t\n-CgDE\n"
    assert aln.deletion_matrix(0).tolist() == [[0, 0, 0, 0], [0, 0, 2, 0], [0, 0, 1, 0]]
    with pytest.raises(ArgumentError):
        aln.a3m(7)


@pytest.mark.skipif(not BALIBASE.is_dir(), reason="../shared/benchmarks not present")
@pytest.mark.parametrize("case", ["BB11001", "BB12001", "BB50001"])
def test_balibase_accuracy(case):
    aln = torchmsa.align(BALIBASE / f"{case}.in.fasta", device="cpu", mode="default")
    _check_valid(aln, read_sequences(BALIBASE / f"{case}.in.fasta"))
    core = (BALIBASE / f"{case}.core.txt").read_text().strip()
    score = score_alignment(
        list(zip(aln.names, aln.rows)), BALIBASE / f"{case}.ref.fasta", core=core
    )
    assert score.sp >= 0.6, score


def test_align_many_equals_one_by_one():
    rng = np.random.default_rng(4)
    jobs = [_family(rng, 5, 30), _family(rng, 3, 20), ["MKV"], _family(rng, 7, 25)]
    jobs[1].append("")
    for mode in ("fast", "default"):
        many = torchmsa.align_many(jobs, device="cpu", mode=mode)
        single = [torchmsa.align(j, device="cpu", mode=mode) for j in jobs]
        assert [a.rows for a in many] == [a.rows for a in single]
        assert all(a.metadata["jobs_in_batch"] == len(jobs) for a in many)


def test_auto_mode_choices():
    small = torchmsa.align(["MKVLAAGHW", "MKVLAGHW", "MKILAAGHW"], device="cpu")
    assert small.metadata["mode"] == "accurate" and small.metadata["requested_mode"] == "auto"


@pytest.mark.parametrize("mode", ["fast", "default", "accurate"])
def test_mostly_empty_inputs_in_every_mode(mode):
    # refinement once indexed an empty score buffer here (one residue, or none at all)
    for seqs in (["---", "A-", ""], ["", "", ""], ["", "MK", "", "M"]):
        aln = torchmsa.align(seqs, device="cpu", mode=mode)
        assert [r.replace("-", "") for r in aln.rows] == [s.replace("-", "") for s in seqs]
        assert len({len(r) for r in aln.rows}) == 1


def _stages(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and how often each ``torchmsa.*`` profiler range ran in it."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        out = fn(*args, **kwargs)
    names = [e.name for e in prof.events() if e.name.startswith("torchmsa.")]
    return out, {name: names.count(name) for name in set(names)}


def test_host_jobs_are_capped_by_cells_and_by_sequences():
    from torchmsa.pipeline.placement import host_job

    policy = ExecutionPolicy(host_job_cells=4 * 10 * 10, host_job_max_n=5, host_accurate_cells=600)

    def small(n, length, mode):
        return host_job(n, length, mode, policy=policy)

    assert small(4, 10, "default")
    assert not small(4, 11, "default")  # N L^2 above the cells
    assert small(5, 8, "default")
    assert not small(6, 8, "default")  # within the cells, above the sequences
    # accurate mode counts its all-pairs local alignments: N (N - 1) / 2 L^2
    assert small(4, 10, "accurate")
    assert not small(5, 8, "accurate")  # 10 pairs of 64 cells
    assert not small(6, 1, "accurate")  # above the sequences
    # the defaults: 2048 sequences, 2^25 cells, 2^27 accurate cells
    assert host_job(2048, 128, "fast") and not host_job(2049, 1, "fast")
    assert not host_job(2048, 129, "default")
    assert host_job(2, 1 << 13, "accurate") and not host_job(3, 1 << 13, "accurate")


def test_matrix_offset_grows_with_the_jobs_size():
    from torchmsa.pipeline import job_offset

    protein = get_alphabet("protein")
    assert job_offset(protein, 2) == job_offset(protein, 1000) == 2.0
    assert job_offset(protein, 2000) == round((2 + 2 * np.log10(2)) * 256) / 256
    assert job_offset(protein, 10_000) == job_offset(protein, 10**6) == 4.0
    # a job of 12 above a threshold of 3 aligns as with that offset in the defaults
    seqs = _family(np.random.default_rng(8), 12, 40, mutate=0.4)
    grown = round((2 + 2 * np.log10(4)) * 256) / 256
    early = AlignConfig(mode="default", scoring=ScoringConfig(offset_from=3))
    assert job_offset(protein, 12, config=early.scoring) == grown
    a = torchmsa.align(seqs, device="cpu", config=early)
    assert a.metadata["matrix_offset"] == grown
    # jobs of different offsets in one call: each aligned with its own
    small = torchmsa.align(seqs[:3], device="cpu", config=early)
    many = torchmsa.align_many([seqs, seqs[:3]], device="cpu", config=early)
    assert [m.metadata["matrix_offset"] for m in many] == [grown, 2.0]
    assert many[0].rows == a.rows and many[1].rows == small.rows
    fixed = AlignConfig(mode="default", scoring=ScoringConfig(offset_from=10**9, offset=grown))
    b = torchmsa.align(seqs, device="cpu", config=fixed)
    assert b.metadata["matrix_offset"] == grown and a.rows == b.rows
    assert torchmsa.align(seqs, device="cpu", mode="default").rows != a.rows


def test_full_matrix_trees_that_cannot_fit_are_a_resource_error():
    from torchmsa.errors import ResourceError

    seqs = _family(np.random.default_rng(9), 6, 30)
    tight = MemoryBudget(host_bytes=36 * 16 - 1)  # 16 bytes a pair
    with pytest.raises(ResourceError, match="guide tree .* of 6 sequences") as err:
        torchmsa.align(seqs, device="cpu", mode="fast", tree="upgma", budget=tight)
    assert err.value.needed == 36 * 16 and "parttree" in str(err.value)
    assert "MemoryBudget(host_bytes=...)" in str(err.value)  # which limit applied
    # the LCS tree streams its rows (single linkage by SLINK): no N x N matrix either
    aln = torchmsa.align(seqs, device="cpu", mode="fast", tree="lcs", budget=tight)
    assert [row.replace("-", "") for row in aln.rows] == seqs
    enough = MemoryBudget(host_bytes=36 * 16)
    aln, seen = _stages(torchmsa.align, seqs, device="cpu", mode="default", budget=enough)
    assert seen["torchmsa.first_tree"] == seen["torchmsa.alignment_tree"] == 1
    # PartTree needs no N x N matrix, and default mode makes no second tree after it
    aln, seen = _stages(
        torchmsa.align, seqs, device="cpu", mode="default", tree="parttree", budget=tight
    )
    assert aln.metadata["tree"] == "parttree" and "torchmsa.alignment_tree" not in seen
    assert seen["torchmsa.first_tree"] == 1
    assert [row.replace("-", "") for row in aln.rows] == seqs


@pytest.mark.parametrize("mode", ["fast", "default", "accurate"])
def test_stages_are_profiler_ranges(mode):
    seqs = _family(np.random.default_rng(10), 7, 40)
    aln, seen = _stages(torchmsa.align_many, [seqs, seqs[:4]], device="cpu", mode=mode)
    assert seen["torchmsa.align"] == seen["torchmsa.encode"] == seen["torchmsa.assemble"] == 1
    assert seen["torchmsa.first_tree"] == 2  # one per job
    assert seen.get("torchmsa.alignment_tree", 0) == (2 if mode == "default" else 0)
    assert seen.get("torchmsa.local_library", 0) == (2 if mode == "accurate" else 0)
    assert seen["torchmsa.progressive_pass"] == (2 if mode == "default" else 1)
    assert ("torchmsa.refine" in seen) == (mode != "fast")


def test_build_tree_is_the_first_tree_of_align():
    seqs = _family(np.random.default_rng(11), 8, 50)
    for mode in ("fast", "accurate"):  # the first tree is also the last
        aln = torchmsa.align(seqs, device="cpu", mode=mode)
        tree = torchmsa.build_tree(seqs, device="cpu", config=AlignConfig(mode=mode))
        assert isinstance(tree, torchmsa.Tree) and tree.newick() == aln.tree.newick()
    # default mode starts from fast mode's tree; "auto" picks accurate for 8 short sequences
    fast = torchmsa.build_tree(seqs, device="cpu", config=AlignConfig(mode="fast"))
    assert torchmsa.build_tree(seqs, config=AlignConfig(mode="default")).newick() == fast.newick()
    auto = torchmsa.build_tree(seqs, device="cpu")
    assert auto.newick() == torchmsa.align(seqs, device="cpu").tree.newick()
    for method in ("nj", "lcs", "parttree"):
        tree = torchmsa.build_tree(
            seqs, device="cpu", method=method, config=AlignConfig(mode="fast")
        )
        aln = torchmsa.align(seqs, device="cpu", mode="fast", tree=method)
        assert tree.newick() == aln.tree.newick(), method
    one = torchmsa.build_tree({"only": "MKV"}, device="cpu")
    assert one.n_leaves == 1 and one.newick() == "only;"
    with pytest.raises(ArgumentError, match="method"):
        torchmsa.build_tree(seqs, method="nj", config=AlignConfig(tree=TreeConfig(method="single")))


def test_fasta_bytes_are_the_fasta_text_and_rows_follow_the_codes():
    """``fasta_bytes`` (what the CLI writes) equals ``format("fasta")`` encoded, byte for byte,
    with lower case, non-ASCII headers, an empty sequence and an all-gap column; every row
    spells its residues where the codes hold residues."""
    from torchmsa.records import Record

    seqs = [
        Record("a", "a ünïcode description", "MKvlaW"),
        Record("b", "b", "MKW"),
        Record("c", "c  two  spaces ", ""),
        Record("d", "d", "mkvLAW"),
    ]
    aln = torchmsa.align(seqs, device="cpu", mode="fast")
    text = aln.format("fasta")
    assert aln.fasta_bytes() == text.encode("utf-8")
    assert text.startswith(">a ünïcode description\n")
    gap = aln.alphabet.gap_code
    for row, (_, _, seq), codes in zip(aln.rows, seqs, aln.codes.tolist(), strict=True):
        assert row.replace("-", "") == seq
        assert [ch != "-" for ch in row] == [c != gap for c in codes]


def test_write_fasta_takes_the_bytes_path_everywhere(tmp_path):
    """``Alignment.write`` in FASTA (a path, ``.gz``, a binary or a text handle) writes exactly
    ``format("fasta")``; ``.gz`` is reproducible (no time stamp)."""
    import gzip

    aln = torchmsa.align(EXAMPLE, device="cpu", mode="fast")
    text = aln.format("fasta")
    aln.write(tmp_path / "a.fasta")
    aln.write(tmp_path / "a.fasta.gz")
    aln.write(tmp_path / "b.fasta.gz")
    assert (tmp_path / "a.fasta").read_text() == text
    assert gzip.decompress((tmp_path / "a.fasta.gz").read_bytes()).decode() == text
    assert (tmp_path / "a.fasta.gz").read_bytes() == (tmp_path / "b.fasta.gz").read_bytes()
    binary, handle = io.BytesIO(), io.StringIO()
    aln.write(binary, "fasta")
    aln.write(handle, "fasta")
    assert binary.getvalue().decode() == handle.getvalue() == text
