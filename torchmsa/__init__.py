"""torchmsa: multiple sequence alignment in PyTorch, on CUDA GPUs through Triton and on the CPU."""

from torchmsa.ops.pairwise import PairwiseAlignment, pairwise_align
from torchmsa.sequences import SequenceBatch

__version__ = "0.1.0"

__all__ = ["PairwiseAlignment", "SequenceBatch", "pairwise_align", "__version__"]
