"""torchmsa: multiple sequence alignment in PyTorch, on CUDA GPUs through Triton and on the CPU."""

from torchmsa import errors, metrics
from torchmsa.alignment import Alignment
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
from torchmsa.ops.pairwise import PairwiseAlignment, pairwise_align
from torchmsa.pipeline import align, align_many, build_tree
from torchmsa.sequences import SequenceBatch
from torchmsa.tree import Tree

__version__ = "0.1.0"

__all__ = [
    "AlignConfig",
    "Alignment",
    "AutoConfig",
    "ConsistencyConfig",
    "ExecutionPolicy",
    "MemoryBudget",
    "PairwiseAlignment",
    "RefineConfig",
    "ScoringConfig",
    "SequenceBatch",
    "Tree",
    "TreeConfig",
    "__version__",
    "align",
    "align_many",
    "build_tree",
    "errors",
    "metrics",
    "pairwise_align",
    "shared_kmer_counts",
]
