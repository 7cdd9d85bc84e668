"""AlphaFold's MSA feature layout, from residue codes and a deletion matrix.

Residues are renumbered in AlphaFold's order ``ARNDCQEGHILKMFPSTWYV``, then ``X`` (20), gap
(21) and the BERT mask token (22): :data:`AF_RESTYPES`. As AlphaFold's ``HHBLITS_AA_TO_ID``
does, ``B`` counts as ``D``, ``Z`` as ``E``, ``U`` as ``C`` and ``O`` / ``J`` as ``X``; ``*``
(which AlphaFold rejects) counts as ``X``.

:func:`alphafold_features` follows AlphaFold's input pipeline (``sample_msa``,
``nearest_neighbor_clusters``, ``summarize_clusters``, ``crop_extra_msa``, ``make_msa_feat``):

* the query stays first and the other rows are shuffled with a seeded :class:`torch.Generator`
  (CPU, so every device draws the same rows); the first ``max_clusters`` rows are the cluster
  centres (``msa``), the rest the extra rows;
* each extra row joins the centre it agrees with at the most columns, counting equal residue
  classes 0..20 (gaps agree with weight 0, as ``gap_agreement_weight=0``); ties go to the
  first centre;
* ``cluster_profile`` is the 23-class mean one-hot of a centre and its extra rows, over
  ``1e-6 + 1 + members``; ``cluster_deletion_mean`` the same mean of the deletion counts;
* ``has_deletion = min(d, 1)``, ``deletion_value = atan(d / 3) * 2 / pi``;
* ``msa_feat`` (49 channels) = one-hot(msa, 23), has_deletion, deletion_value,
  cluster_profile (23), ``atan(cluster_deletion_mean / 3) * 2 / pi``;
* ``extra_msa`` keeps ``max_extra`` extra rows drawn at random after clustering (all of them
  count in the cluster statistics).

BERT masking (a training-time augmentation) is not applied: channel 22 of every one-hot is 0.
"""

from __future__ import annotations

import math

import torch

from torchmsa.config import MemoryBudget
from torchmsa.errors import ArgumentError
from torchmsa.features.onehot import column_chunk, match_counts, product_dtype
from torchmsa.ops.backend import budget_bytes

__all__ = [
    "AF_RESTYPES",
    "GAP_ID",
    "MASK_ID",
    "alphafold_ids",
    "alphafold_one_hot",
    "has_deletion",
    "deletion_value",
    "cluster_assignment",
    "alphafold_features",
]

AF_RESTYPES = "ARNDCQEGHILKMFPSTWYVX-"
X_ID, GAP_ID, MASK_ID = 20, 21, 22
# torchmsa protein codes (ARNDCQEGHILKMFPSTWYV B Z X U O J *, gap) -> AlphaFold ids
_FROM_PROTEIN = list(range(20)) + [3, 6, X_ID, 4, X_ID, X_ID, X_ID, GAP_ID]


def alphafold_ids(codes: torch.Tensor) -> torch.Tensor:
    """``int64``, same shape: torchmsa protein codes as AlphaFold residue ids (0..21)."""
    if codes.numel() and (int(codes.min()) < 0 or int(codes.max()) >= len(_FROM_PROTEIN)):
        raise ArgumentError(
            f"`codes` holds values outside 0..{len(_FROM_PROTEIN) - 1}; pass protein codes "
            f"(torchmsa.alphabet.PROTEIN)"
        )
    table = torch.tensor(_FROM_PROTEIN, dtype=torch.long, device=codes.device)
    return table[codes.long()]


def alphafold_one_hot(ids: torch.Tensor, classes: int = 23) -> torch.Tensor:
    """``float32 [..., classes]`` one-hot of AlphaFold ids: 23 (residues, X, gap, mask: the
    MSA features), 22 (no mask channel) or 21 (residues and X: ``aatype``; a gap or mask id
    gives an all-zero vector)."""
    if classes not in (21, 22, 23):
        raise ArgumentError(f"Invalid value for `classes` argument: {classes!r}; use 21, 22 or 23")
    ids = ids.long()
    out = torch.zeros((*ids.shape, classes + 2), dtype=torch.float32, device=ids.device)
    out.scatter_(-1, ids.clamp(0, classes + 1)[..., None], 1.0)
    return out[..., :classes]


def deletion_value(deletions: torch.Tensor) -> torch.Tensor:
    """AlphaFold's squashed deletion count, ``atan(d / 3) * 2 / pi`` (float32)."""
    return torch.atan(deletions.float() / 3.0) * (2.0 / math.pi)


def cluster_assignment(
    centres: torch.Tensor,
    extra: torch.Tensor,
    *,
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """``int64 [E]``: for each extra row (AlphaFold ids ``[E, L]``), the centre (``[M, L]``)
    it agrees with at the most residue columns (classes 0..20), the first on ties."""
    device = extra.device
    e, width = extra.shape
    m = centres.shape[0]
    if e == 0 or m == 0:
        return torch.zeros(e, dtype=torch.long, device=device)
    dtype = product_dtype(device, compute_dtype)
    chunk = column_chunk(dtype, width)
    lut = torch.full((256,), X_ID + 1, dtype=torch.long, device=device)
    lut[: X_ID + 1] = torch.arange(X_ID + 1, device=device)
    elt = torch.empty((), dtype=dtype).element_size()
    per_row = chunk * ((X_ID + 2) * elt + 24) + 8 * m
    fixed = m * chunk * ((X_ID + 2) * elt + 24)
    rows = max(1, (budget_bytes(budget, device) - fixed) // per_row)
    out = torch.empty(e, dtype=torch.long, device=device)
    for r0 in range(0, e, rows):
        agree = match_counts(extra[r0 : r0 + rows], centres, lut, X_ID + 1, dtype, chunk)
        out[r0 : r0 + rows] = torch.argmax(agree, dim=1)
    return out


def _cluster_sums(assign, extra, extra_del, m, rows):
    """Sums over each centre's extra rows: one-hot ``[m, L, 23]`` and deletions ``[m, L]``."""
    e, width = extra.shape
    device = extra.device
    hot = torch.zeros(m * width * 23, dtype=torch.float32, device=device)
    dels = torch.zeros(m * width, dtype=torch.float32, device=device)
    cols = torch.arange(width, device=device)
    for r0 in range(0, e, rows):
        a = assign[r0 : r0 + rows, None] * width + cols[None, :]  # [r, L]
        hot.index_add_(0, (a * 23 + extra[r0 : r0 + rows]).reshape(-1), _ones(a))
        dels.index_add_(0, a.reshape(-1), extra_del[r0 : r0 + rows].reshape(-1).float())
    return hot.view(m, width, 23), dels.view(m, width)


def _ones(a: torch.Tensor) -> torch.Tensor:
    return torch.ones(a.numel(), dtype=torch.float32, device=a.device)


def alphafold_features(
    ids: torch.Tensor,
    deletions: torch.Tensor,
    *,
    max_clusters: int = 512,
    max_extra: int = 1024,
    seed: int = 0,
    shuffle: bool = True,
    budget: MemoryBudget | int | None = None,
    compute_dtype: torch.dtype | None = None,
) -> dict[str, torch.Tensor]:
    """AlphaFold's MSA features (module docstring).

    Arguments:
        ids: ``[N, L]`` AlphaFold residue ids (:func:`alphafold_ids`), the query first.
        deletions: ``[N, L]`` deletion counts (AlphaFold's ``deletion_matrix``).
        max_clusters: cluster centres (AlphaFold's ``max_msa_clusters``, 512).
        max_extra: extra rows kept (``max_extra_msa``: 1024; 5120 in some models).
        seed: the torch.Generator's seed for the shuffle and the extra-row crop.
        shuffle: shuffle the non-query rows (AlphaFold does); ``False`` keeps input order and
            crops the extra rows to the first ``max_extra``.
        budget, compute_dtype: the memory and product dtype of the cluster assignment.

    Returns:
        float32 features unless said: ``aatype`` (int64 [L]), ``target_feat`` [L, 22]
        (channel 0: between-segment residues, 0), ``msa`` (int64 [M, L]),
        ``deletion_matrix``, ``msa_mask``, ``has_deletion``, ``deletion_value``,
        ``cluster_deletion_mean`` [M, L], ``cluster_profile`` [M, L, 23], ``msa_feat``
        [M, L, 49], ``extra_msa`` (int64 [E, L]), ``extra_deletion_matrix``,
        ``extra_msa_mask``, ``extra_has_deletion``, ``extra_deletion_value`` [E, L],
        ``cluster_assignment`` (int64, the centre of every non-centre row before the crop),
        and ``msa_rows`` / ``extra_rows`` (int64: the input rows used).
    """
    for name, value in (("max_clusters", max_clusters), ("max_extra", max_extra)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ArgumentError(f"Invalid value for `{name}` argument: {value!r}; use a count")
    if max_clusters < 1:
        raise ArgumentError("Invalid value for `max_clusters` argument: 0; use at least 1")
    if ids.ndim != 2 or tuple(deletions.shape) != tuple(ids.shape):
        raise ArgumentError(
            f"`ids` and `deletions` must both be [N, L]; got {tuple(ids.shape)} and "
            f"{tuple(deletions.shape)}"
        )
    device = ids.device
    n, width = ids.shape
    if n == 0:
        raise ArgumentError("`ids` has no rows; AlphaFold's features need at least the query")
    ids = ids.long()
    gen = torch.Generator().manual_seed(int(seed))
    rest = torch.randperm(n - 1, generator=gen) + 1 if shuffle else torch.arange(1, n)
    order = torch.cat([torch.zeros(1, dtype=torch.long), rest]).to(device)
    centre_rows, extra_all = order[:max_clusters], order[max_clusters:]
    msa, dmat = ids[centre_rows], deletions[centre_rows].float()
    extra, extra_del = ids[extra_all], deletions[extra_all].float()
    m = msa.shape[0]
    assign = cluster_assignment(msa, extra, budget=budget, compute_dtype=compute_dtype)
    rows = max(1, (1 << 24) // max(1, width))
    hot_sum, del_sum = _cluster_sums(assign, extra, extra_del, m, rows)
    members = torch.bincount(assign, minlength=m).float() if extra.shape[0] else None
    counts = torch.full((m,), 1e-6, dtype=torch.float32, device=device) + 1.0
    if members is not None:
        counts = counts + members
    msa_hot = alphafold_one_hot(msa, 23)
    profile = (msa_hot + hot_sum) / counts[:, None, None]
    del_mean = (dmat + del_sum) / counts[:, None]
    if shuffle:
        crop = torch.randperm(extra_all.numel(), generator=gen)[:max_extra].to(device)
    else:
        crop = torch.arange(min(max_extra, extra_all.numel()), device=device)
    extra_rows = extra_all[crop]
    extra_kept, extra_del_kept = extra[crop], extra_del[crop]
    has_del = has_deletion(dmat)
    del_val = deletion_value(dmat)
    mean_val = deletion_value(del_mean)
    msa_feat = torch.cat(
        [msa_hot, has_del[..., None], del_val[..., None], profile, mean_val[..., None]], dim=-1
    )
    aatype = ids[0]
    target = torch.cat(
        [torch.zeros((width, 1), device=device), alphafold_one_hot(aatype, 21)], dim=-1
    )
    return {
        "aatype": aatype,
        "target_feat": target,
        "msa": msa,
        "deletion_matrix": dmat,
        "msa_mask": torch.ones_like(dmat),
        "has_deletion": has_del,
        "deletion_value": del_val,
        "cluster_profile": profile,
        "cluster_deletion_mean": del_mean,
        "msa_feat": msa_feat,
        "extra_msa": extra_kept,
        "extra_deletion_matrix": extra_del_kept,
        "extra_msa_mask": torch.ones_like(extra_del_kept),
        "extra_has_deletion": has_deletion(extra_del_kept),
        "extra_deletion_value": deletion_value(extra_del_kept),
        "cluster_assignment": assign,
        "msa_rows": centre_rows,
        "extra_rows": extra_rows,
    }


def has_deletion(deletions: torch.Tensor) -> torch.Tensor:
    """AlphaFold's ``has_deletion``: 1 where a deletion count is positive (float32)."""
    return deletions.float().clamp(0, 1)
