"""torchmsa: multiple sequence alignment in PyTorch, on CUDA GPUs through Triton and on the CPU."""

# first: the thread settings must be in place before torch loads OpenMP
from torchmsa import runtime  # noqa: F401  # isort: skip
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
