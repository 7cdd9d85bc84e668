"""Configuration objects through the public API: validation, repr, overrides, pickling, the
record in ``Alignment.metadata``, keyword shortcuts, and placement that never changes a result."""

import pickle

import numpy as np
import pytest
import torch

import torchmsa
from torchmsa.config import (
    AlignConfig,
    AutoConfig,
    ConsistencyConfig,
    ExecutionPolicy,
    MemoryBudget,
    RefineConfig,
    ScoringConfig,
    TreeConfig,
    describe,
    with_overrides,
)
from torchmsa.errors import ArgumentError

AMINO = "ARNDCQEGHILKMFPSTWYV"


def _family(seed: int, n: int, length: int, mutate: float = 0.4) -> list[str]:
    """Substitutions and a few short insertions and deletions around a random root."""
    rng = np.random.default_rng(seed)
    root = "".join(rng.choice(list(AMINO), length))
    out = []
    for _ in range(n):
        s = [c if rng.random() > mutate else rng.choice(list(AMINO)) for c in root]
        for _ in range(3):
            k = int(rng.integers(0, len(s)))
            if rng.random() < 0.5:
                del s[k : k + int(rng.integers(1, 6))]
            else:
                s[k:k] = list(rng.choice(list(AMINO), int(rng.integers(1, 6))))
        out.append("".join(s))
    return out


@pytest.mark.parametrize(
    "make, field, shown",
    [
        (lambda: AlignConfig(mode="turbo"), "AlignConfig.mode", "'turbo'"),
        (lambda: ScoringConfig(gap_open=-2), "ScoringConfig.gap_open", "-2"),
        (lambda: ScoringConfig(gap_extend=-1.5), "ScoringConfig.gap_extend", "-1.5"),
        (lambda: ScoringConfig(gap_open="x"), "ScoringConfig.gap_open", "'x'"),
        (lambda: ScoringConfig(terminal=(1, 0)), "ScoringConfig.terminal", r"\(1, 0\)"),
        (lambda: ScoringConfig(occ_shift=17), "ScoringConfig.occ_shift", "17"),
        (lambda: TreeConfig(method="random"), "TreeConfig.method", "'random'"),
        (lambda: TreeConfig(parttree_merge_fraction=0.0), "parttree_merge_fraction", "0.0"),
        (lambda: AutoConfig(accurate_max_n=-1), "AutoConfig.accurate_max_n", "-1"),
        (lambda: ConsistencyConfig(weight=True), "ConsistencyConfig.weight", "True"),
        (lambda: RefineConfig(rounds_default=1.5), "RefineConfig.rounds_default", "1.5"),
        (lambda: ExecutionPolicy(run_rows=0), "ExecutionPolicy.run_rows", "0"),
        (lambda: ExecutionPolicy(kmer_method="dense"), "ExecutionPolicy.kmer_method", "'dense'"),
        (lambda: MemoryBudget(device_fraction=1.5), "MemoryBudget.device_fraction", "1.5"),
        (lambda: AlignConfig(scoring=TreeConfig()), "AlignConfig.scoring", "TreeConfig"),
    ],
)
def test_validation_errors_name_the_field_and_echo_the_value(make, field, shown):
    with pytest.raises(ArgumentError, match=f"{field}.*{shown}"):
        make()


def test_configs_are_frozen_and_keyword_only():
    config = AlignConfig()
    with pytest.raises(AttributeError):
        config.mode = "fast"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ScoringConfig("BLOSUM62")  # type: ignore[misc]


def test_repr_shows_only_non_defaults():
    assert repr(AlignConfig()) == "AlignConfig()"
    assert repr(ExecutionPolicy()) == "ExecutionPolicy()"
    assert repr(ConsistencyConfig(weight=16)) == "ConsistencyConfig(weight=16)"
    config = AlignConfig(mode="fast", consistency=ConsistencyConfig(weight=16, trim_min=60))
    assert repr(config) == (
        "AlignConfig(mode='fast', consistency=ConsistencyConfig(weight=16, trim_min=60))"
    )
    assert describe(AlignConfig()) == describe(ExecutionPolicy()) == ""
    assert describe(config) == "mode='fast', consistency=ConsistencyConfig(weight=16, trim_min=60)"
    assert describe(ExecutionPolicy(threads=2)) == "threads=2"


def test_overrides_parse_by_the_fields_type():
    config = with_overrides(
        AlignConfig(),
        [
            "consistency.weight=16",
            "mode=accurate",
            "scoring.gap_open=9.5",
            "scoring.terminal=(1,3)",
            "consistency.karlin=0.3,0.05",
            "tree.lcs_min_n=0x100",
        ],
    )
    assert config.consistency.weight == 16 and config.mode == "accurate"
    assert config.scoring.gap_open == 9.5 and config.scoring.terminal == (1, 3)
    assert config.consistency.karlin == (0.3, 0.05) and config.tree.lcs_min_n == 256
    assert with_overrides(config, ["scoring.gap_open=none"]).scoring.gap_open is None
    policy = with_overrides(ExecutionPolicy(), ["run_rows=60", "threads=2", "threads=None"])
    assert policy.run_rows == 60 and policy.threads is None
    assert with_overrides(MemoryBudget(), ["host_bytes=4096"]).host_bytes == 4096
    # a parsed value is validated like any other
    with pytest.raises(ArgumentError, match="ConsistencyConfig.weight.*-3"):
        with_overrides(AlignConfig(), ["consistency.weight=-3"])


@pytest.mark.parametrize(
    "items, match",
    [
        (["consistency.wieght=16"], "consistency.wieght"),
        (["nosuch=1"], "nosuch"),
        (["mode.x=1"], "mode.x"),
        (["consistency.weight"], "NAME=VALUE"),
        (["consistency.weight=lots"], "lots"),
    ],
)
def test_unknown_or_malformed_overrides_raise(items, match):
    with pytest.raises(ArgumentError, match=match):
        with_overrides(AlignConfig(), items)


def test_configs_pickle():
    objs = [
        AlignConfig(mode="fast", scoring=ScoringConfig(matrix="PAM250", terminal=(1, 3))),
        ExecutionPolicy(threads=2, run_rows=7),
        MemoryBudget(host_bytes=1 << 20),
    ]
    for obj in objs:
        back = pickle.loads(pickle.dumps(obj))
        assert back == obj and repr(back) == repr(obj)
    assert hash(objs[0]) == hash(pickle.loads(pickle.dumps(objs[0])))


def test_public_api_exports_the_configs():
    for name in ("AlignConfig", "ExecutionPolicy", "MemoryBudget", "ConsistencyConfig", "Tree"):
        assert name in torchmsa.__all__ and hasattr(torchmsa, name)
    assert torchmsa.AlignConfig is AlignConfig


def test_metadata_records_config_and_policy():
    seqs = _family(1, 5, 40)
    plain = torchmsa.align(seqs, device="cpu", mode="fast")
    assert plain.metadata["config"] == "mode='fast'" and plain.metadata["policy"] == ""
    config = AlignConfig(mode="accurate", consistency=ConsistencyConfig(weight=16))
    aln = torchmsa.align(seqs, device="cpu", config=config, policy=ExecutionPolicy(threads=1))
    assert aln.metadata["config"] == describe(config)
    assert "weight=16" in aln.metadata["config"] and aln.metadata["policy"] == "threads=1"
    assert aln.metadata["mode"] == aln.metadata["requested_mode"] == "accurate"
    assert torchmsa.align(seqs, device="cpu").metadata["config"] == ""


def test_shortcuts_fill_the_config_and_conflicts_name_both():
    seqs = _family(2, 6, 40)
    config = AlignConfig(mode="default", scoring=ScoringConfig(gap_open=9, matrix="PAM250"))
    by_config = torchmsa.align(seqs, device="cpu", config=config)
    by_keywords = torchmsa.align(seqs, device="cpu", mode="default", gap_open=9, matrix="PAM250")
    assert by_config.rows == by_keywords.rows
    assert by_config.metadata["config"] == by_keywords.metadata["config"]
    # the same value twice, or a keyword over a default field: no conflict
    same = torchmsa.align(seqs, device="cpu", config=config, mode="default", gap_open=9)
    assert same.rows == by_config.rows
    filled = torchmsa.align(seqs, device="cpu", config=config, tree="nj")
    assert filled.metadata["tree"] == "nj"
    with pytest.raises(ArgumentError, match=r"`mode='fast'`.*`config.mode='default'`"):
        torchmsa.align(seqs, device="cpu", config=config, mode="fast")
    with pytest.raises(ArgumentError, match=r"`gap_open=11`.*`config.scoring.gap_open=9`"):
        torchmsa.align_many([seqs], device="cpu", config=config, gap_open=11)
    with pytest.raises(ArgumentError, match="custom matrix.*config.scoring.matrix='PAM250'"):
        from Bio.Align import substitution_matrices

        blosum = substitution_matrices.load("BLOSUM62")
        torchmsa.align(seqs, device="cpu", config=config, matrix=blosum)
    with pytest.raises(ArgumentError, match="`config` argument"):
        torchmsa.align(seqs, device="cpu", config={"mode": "fast"})
    with pytest.raises(ArgumentError, match="`policy` argument"):
        torchmsa.align(seqs, device="cpu", policy=AlignConfig())


def test_a_custom_matrix_keyword_still_aligns():
    from Bio.Align import substitution_matrices

    seqs = _family(3, 5, 30)
    blosum = substitution_matrices.load("BLOSUM62")
    custom = torchmsa.align(seqs, device="cpu", mode="fast", matrix=blosum)
    named = torchmsa.align(seqs, device="cpu", mode="fast", matrix="BLOSUM62")
    assert custom.rows == named.rows


def test_config_fields_change_the_alignment_they_name():
    # every setting reaches its stage: a changed value changes these alignments
    seqs = _family(0, 9, 60)
    base = torchmsa.align(seqs, device="cpu", mode="accurate")
    for config in (
        AlignConfig(mode="accurate", consistency=ConsistencyConfig(weight=0)),
        AlignConfig(mode="accurate", scoring=ScoringConfig(offset=0.5)),
        AlignConfig(mode="accurate", scoring=ScoringConfig(gap_open=4)),
        AlignConfig(mode="accurate", consistency=ConsistencyConfig(entry_floor=0)),
    ):
        assert torchmsa.align(seqs, device="cpu", config=config).rows != base.rows, config
    none = AlignConfig(mode="accurate", refine=RefineConfig(rounds_accurate=0))
    assert torchmsa.align(seqs, device="cpu", config=none).metadata.get("refined_edges", 0) == 0
    small = AlignConfig(mode="default", tree=TreeConfig(lcs_min_n=3))
    assert torchmsa.align(seqs, device="cpu", config=small).metadata["tree"] == "lcs"
    auto = AlignConfig(auto=AutoConfig(accurate_max_n=3))
    assert torchmsa.align(seqs, device="cpu", config=auto).metadata["mode"] == "default"


EXTREMES = [
    # everything in numba on the host, nothing batched, every pair in linear space
    ExecutionPolicy(
        cpu_level_cells=1 << 62,
        cpu_pair_cells=1 << 62,
        lone_pair_cells=1,
        linear_pair_cells=0,
        host_cells=1 << 62,
        host_edge_cells=1 << 62,
        threaded_edge_cells=1,
        threads=1,
    ),
    # everything batched, in the smallest batches and pools
    ExecutionPolicy(
        cpu_level_cells=-1,
        cpu_pair_cells=-1,
        cpu_device_pair_cells=-1,
        lone_pair_cells=1 << 62,
        linear_pair_cells=1 << 62,
        host_cells=-1,
        host_edge_cells=-1,
        run_rows=1,
        pool_rows=1,
        max_batch_cells=1,
        level_bytes=1,
        host_level_bytes=1,
        local_batch_cells=1,
        retree_block=1,
        parttree_dense_pairs=1,
        parttree_pair_chunk=1,
        kmer_method="lists",
    ),
]


@pytest.mark.parametrize("mode", ["fast", "default", "accurate"])
def test_extreme_policies_give_bit_identical_alignments(mode):
    jobs = [_family(5, 9, 50), _family(6, 4, 33), ["MKV"]]
    want = torchmsa.align_many(jobs, device="cpu", mode=mode)
    for policy in EXTREMES:
        got = torchmsa.align_many(jobs, device="cpu", mode=mode, policy=policy)
        for g, w in zip(got, want):
            assert torch.equal(g.codes, w.codes) and g.rows == w.rows, policy
            assert g.tree is None or g.tree.newick() == w.tree.newick()
    budget = MemoryBudget(host_bytes=1 << 20)
    got = torchmsa.align_many(jobs, device="cpu", mode=mode, budget=budget)
    assert [g.rows for g in got] == [w.rows for w in want]


def test_extreme_policies_keep_parttree_and_lcs_trees():
    seqs = _family(7, 30, 45, mutate=0.35)
    for tree in ("parttree", "lcs"):
        want = torchmsa.align(seqs, device="cpu", mode="fast", tree=tree)
        for policy in EXTREMES:
            got = torchmsa.align(seqs, device="cpu", mode="fast", tree=tree, policy=policy)
            assert got.tree.newick() == want.tree.newick() and got.rows == want.rows


def test_thread_cap_is_restored():
    import numba

    before = numba.get_num_threads(), torch.get_num_threads()
    torchmsa.align(_family(8, 4, 20), device="cpu", mode="fast", policy=ExecutionPolicy(threads=1))
    assert (numba.get_num_threads(), torch.get_num_threads()) == before
