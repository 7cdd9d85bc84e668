"""torchmsa: multiple sequence alignment in PyTorch, on CUDA GPUs through Triton and on the CPU."""

from torchmsa import errors, metrics
from torchmsa.alignment import Alignment
from torchmsa.ops.kmer import shared_kmer_counts
from torchmsa.ops.pairwise import PairwiseAlignment, pairwise_align
from torchmsa.pipeline import align, align_many
from torchmsa.sequences import SequenceBatch

__version__ = "0.1.0"

__all__ = [
    "Alignment",
    "PairwiseAlignment",
    "SequenceBatch",
    "__version__",
    "align",
    "align_many",
    "errors",
    "metrics",
    "pairwise_align",
    "shared_kmer_counts",
]
