"""Features of an MSA for models, as batched torch on the codes' device.

Every function takes tensors (``[N, C]`` residue codes and the alphabet's gap code) and
returns tensors; :class:`torchmsa.Alignment` has a method for each. One module per feature:

* :mod:`~torchmsa.features.read`: an existing MSA (A3M insertions kept as the deletion matrix);
* :mod:`~torchmsa.features.identity`: pairwise identity, in tiles that fit a memory budget;
* :mod:`~torchmsa.features.weights`: sequence weights and Neff;
* :mod:`~torchmsa.features.filters`: hhfilter-like filters, greedy diverse selection;
* :mod:`~torchmsa.features.alphafold`: AlphaFold's MSA feature layout;
* :mod:`~torchmsa.features.logodds`: log-odds PSSM.
"""

from typing import TYPE_CHECKING

from torchmsa.lazy import lazy_attributes

if TYPE_CHECKING:
    from torchmsa.features.alphafold import (
        AF_RESTYPES,
        alphafold_features,
        alphafold_ids,
        alphafold_one_hot,
        cluster_assignment,
        deletion_value,
        has_deletion,
    )
    from torchmsa.features.filters import coverage, filter_rows, select_diverse
    from torchmsa.features.identity import (
        DEFINITIONS,
        PairIdentity,
        identity_matrix,
        identity_to_rows,
    )
    from torchmsa.features.logodds import pssm, pssm_states
    from torchmsa.features.read import MSARows, parse_a3m, read_msa
    from torchmsa.features.weights import neff, sequence_weights

# each name from its module on first use: torchmsa.Alignment (which every align returns)
# then loads only the MSA reader, not the feature code (issue #36)
_WHERE = {
    **dict.fromkeys(
        (
            "AF_RESTYPES",
            "alphafold_features",
            "alphafold_ids",
            "alphafold_one_hot",
            "cluster_assignment",
            "deletion_value",
            "has_deletion",
        ),
        "alphafold",
    ),
    **dict.fromkeys(("coverage", "filter_rows", "select_diverse"), "filters"),
    **dict.fromkeys(
        ("DEFINITIONS", "PairIdentity", "identity_matrix", "identity_to_rows"), "identity"
    ),
    **dict.fromkeys(("pssm", "pssm_states"), "logodds"),
    **dict.fromkeys(("MSARows", "parse_a3m", "read_msa"), "read"),
    **dict.fromkeys(("neff", "sequence_weights"), "weights"),
}

__all__ = [
    "AF_RESTYPES",
    "DEFINITIONS",
    "MSARows",
    "PairIdentity",
    "alphafold_features",
    "alphafold_ids",
    "alphafold_one_hot",
    "cluster_assignment",
    "coverage",
    "deletion_value",
    "filter_rows",
    "has_deletion",
    "identity_matrix",
    "identity_to_rows",
    "neff",
    "parse_a3m",
    "pssm",
    "pssm_states",
    "read_msa",
    "select_diverse",
    "sequence_weights",
]


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
