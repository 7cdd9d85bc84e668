"""The one-thread twins of numba's parallel functions (:mod:`torchmsa.cpu.twins`) give the
same integers as the parallel functions: the same alignments, trees and scores whichever one a
call takes."""

from __future__ import annotations

import pytest
import torch

import torchmsa
from torchmsa.alphabet import get_alphabet
from torchmsa.constants import LOCAL
from torchmsa.cpu import dp, twins
from torchmsa.scoring import get_scoring
from torchmsa.synthetic import family


def _force(monkeypatch, which: str) -> None:
    """``small``: every call below the threshold; ``parallel``: none; ``one-thread``: every
    call above it, on one thread (the compiled twins of large calls)."""
    cells = {"small": 1 << 62, "parallel": -1, "one-thread": 0}[which]
    monkeypatch.setattr(twins, "SERIAL_CELLS", cells)
    threads = 1 if which == "one-thread" else twins.numba.get_num_threads()
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: threads)


@pytest.mark.parametrize("mode", ["default", "accurate"])
def test_twins_align_alike(monkeypatch, mode):
    seqs = {f"s{k}": s for k, s in enumerate(family(14, 140, 7, indels=True))}
    out = {}
    for which in ("small", "parallel", "one-thread"):
        _force(monkeypatch, which)
        aln = torchmsa.align(seqs, device="cpu", mode=mode)
        out[which] = (aln.names, aln.codes.tolist(), aln.tree.newick())
    assert out["small"] == out["parallel"] == out["one-thread"]


def test_twins_score_and_align_pairs_alike(monkeypatch):
    # local pairs past the striped kernel's threshold: the parallel function takes it
    seqs = family(6, 300, 3, indels=True)
    enc = torchmsa.encode_sequences(seqs, seqtype="protein")
    a, b = enc.codes[:3], enc.codes[3:]
    la, lb = enc.lengths[:3], enc.lengths[3:]
    mat = torch.as_tensor(get_scoring(get_alphabet("protein")).matrix, dtype=torch.int32)
    got = {}
    for which in ("small", "parallel", "one-thread"):
        _force(monkeypatch, which)
        score = dp.pairwise_score(a, la, b, lb, mat, 10, 1, LOCAL)
        info, ops = dp.pairwise_align(a, la, b, lb, mat, 10, 1, LOCAL)
        got[which] = (score, info, ops)
    for s, p, o in zip(got["small"], got["parallel"], got["one-thread"]):
        assert torch.equal(s, p) and torch.equal(s, o)


def test_serial_below_the_threshold_and_on_one_thread(monkeypatch):
    assert twins.serial(0) and twins.small(0)
    assert not twins.small(twins.SERIAL_CELLS)
    monkeypatch.setattr(twins.numba, "get_num_threads", lambda: 1)
    assert twins.serial(twins.SERIAL_CELLS) and not twins.small(twins.SERIAL_CELLS)
    monkeypatch.setattr(twins, "SERIAL_CELLS", -1)
    assert not twins.serial(0) and not twins.small(0)
