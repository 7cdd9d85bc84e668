"""benchmarks.common: ``--set module.NAME=expr`` settings of a benchmark run."""

import pytest

from benchmarks.common import apply_settings, parse_variant
from torchmsa import pipeline


def test_set_changes_a_module_constant_and_rejects_unknown_names(monkeypatch):
    monkeypatch.setattr(pipeline, "CONSISTENCY_WEIGHT", pipeline.CONSISTENCY_WEIGHT)
    apply_settings(["pipeline.CONSISTENCY_WEIGHT=2**5"])
    assert pipeline.CONSISTENCY_WEIGHT == 32
    label, sets = parse_variant("big:pipeline.LCS_MIN_N=1 << 10,pipeline.REFINE_MAX_N=-3")
    assert label == "big"
    assert [(m.__name__, n, v) for m, n, v in sets] == [
        ("torchmsa.pipeline", "LCS_MIN_N", 1024),
        ("torchmsa.pipeline", "REFINE_MAX_N", -3),
    ]
    with pytest.raises(ValueError, match="has no CONSISTENCY_WEIGTH"):
        apply_settings(["pipeline.CONSISTENCY_WEIGTH=8"])
    with pytest.raises(ValueError, match="not an integer expression"):
        apply_settings(["pipeline.CONSISTENCY_WEIGHT=__import__('os')"])
    assert pipeline.CONSISTENCY_WEIGHT == 32
