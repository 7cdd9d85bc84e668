"""torchmsa: multiple sequence alignment in PyTorch, on CUDA GPUs through Triton and on the CPU."""

# first: the thread settings must be in place before torch loads OpenMP
from torchmsa import runtime  # noqa: F401  # isort: skip

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what type checkers see: the names as they load on first use
    from torchmsa import data, errors, features, metrics, templates
    from torchmsa.addmerge import add, merge
    from torchmsa.alignment import Alignment
    from torchmsa.client import Client
    from torchmsa.config import (
        AlignConfig,
        AutoConfig,
        ConsistencyConfig,
        ExecutionPolicy,
        MemoryBudget,
        RefineConfig,
        ScoringConfig,
        TreeConfig,
    )
    from torchmsa.ops.kmer import shared_kmer_counts
    from torchmsa.ops.local import LocalHit, local_topk
    from torchmsa.ops.pairwise import (
        EncodedSequences,
        PairwiseAlignment,
        PairwiseScores,
        PairwiseTraceback,
        encode_sequences,
        pairwise_align,
        pairwise_scores,
        pairwise_traceback,
    )
    from torchmsa.pipeline import align, align_many, build_tree
    from torchmsa.precompile import warmup
    from torchmsa.sequences import SequenceBatch
    from torchmsa.tree import Tree

# Everything else loads on first use (PEP 562): ``import torchmsa`` loads neither torch nor
# numba, and ``torchmsa align`` only what it touches, not the dataset, feature, template,
# client and add/merge modules (issue #36). Each public name: the module that defines it.
_LAZY = {
    "data": "torchmsa.data",
    "errors": "torchmsa.errors",
    "features": "torchmsa.features",
    "metrics": "torchmsa.metrics",
    "templates": "torchmsa.templates",
    "add": "torchmsa.addmerge",
    "merge": "torchmsa.addmerge",
    "Alignment": "torchmsa.alignment",
    "Client": "torchmsa.client",
    **dict.fromkeys(
        (
            "AlignConfig",
            "AutoConfig",
            "ConsistencyConfig",
            "ExecutionPolicy",
            "MemoryBudget",
            "RefineConfig",
            "ScoringConfig",
            "TreeConfig",
        ),
        "torchmsa.config",
    ),
    "shared_kmer_counts": "torchmsa.ops.kmer",
    "LocalHit": "torchmsa.ops.local",
    "local_topk": "torchmsa.ops.local",
    **dict.fromkeys(
        (
            "EncodedSequences",
            "PairwiseAlignment",
            "PairwiseScores",
            "PairwiseTraceback",
            "encode_sequences",
            "pairwise_align",
            "pairwise_scores",
            "pairwise_traceback",
        ),
        "torchmsa.ops.pairwise",
    ),
    "align": "torchmsa.pipeline",
    "align_many": "torchmsa.pipeline",
    "build_tree": "torchmsa.pipeline",
    "warmup": "torchmsa.precompile",
    "SequenceBatch": "torchmsa.sequences",
    "Tree": "torchmsa.tree",
}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'torchmsa' has no attribute {name!r}")
    import importlib

    loaded = importlib.import_module(module)
    value = loaded if module == f"torchmsa.{name}" else getattr(loaded, name)  # a submodule
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__version__ = "0.1.0"

__all__ = [
    "AlignConfig",
    "Alignment",
    "Client",
    "AutoConfig",
    "ConsistencyConfig",
    "EncodedSequences",
    "ExecutionPolicy",
    "LocalHit",
    "MemoryBudget",
    "PairwiseAlignment",
    "PairwiseScores",
    "PairwiseTraceback",
    "RefineConfig",
    "ScoringConfig",
    "SequenceBatch",
    "Tree",
    "TreeConfig",
    "__version__",
    "add",
    "align",
    "align_many",
    "build_tree",
    "data",
    "encode_sequences",
    "errors",
    "features",
    "local_topk",
    "merge",
    "metrics",
    "pairwise_align",
    "pairwise_scores",
    "pairwise_traceback",
    "shared_kmer_counts",
    "templates",
    "warmup",
]
