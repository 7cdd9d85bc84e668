"""MSAs for a PyTorch ``DataLoader``: a dataset over MSA files and a padding ``collate``.

>>> from torch.utils.data import DataLoader
>>> loader = DataLoader(MSADataset("msas/", max_seqs=256), batch_size=4,
...                     collate_fn=collate)  # doctest: +SKIP
>>> batch = next(iter(loader))  # doctest: +SKIP
>>> batch["msa"].shape, batch["msa_mask"].shape  # [B, N, L] both  # doctest: +SKIP

An item is what ``transform(alignment)`` returns, by default :func:`default_item`: the file's
``name``, ``msa`` (``int64 [N, L]`` residue codes) and ``deletion_matrix`` (``float32
[N, L]``) over the query's columns (every column of an A3M: its match columns).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

from torchmsa.alignment import Alignment
from torchmsa.errors import ArgumentError, EmptyInputError

__all__ = ["MSA_SUFFIXES", "MSADataset", "collate", "default_item", "msa_tensors"]

MSA_SUFFIXES = (
    ".a3m", ".a2m", ".fasta", ".fa", ".fas", ".faa", ".afa", ".mfa", ".sto", ".stk",
    ".stockholm", ".aln", ".clustal", ".clw", ".phy", ".phylip",
)  # fmt: skip


def _is_msa(path: Path) -> bool:
    name = path.name.lower()
    name = name[:-3] if name.endswith(".gz") else name
    return path.is_file() and name.endswith(MSA_SUFFIXES)


def _name(path: Path) -> str:
    name = path.name[:-3] if path.name.lower().endswith(".gz") else path.name
    return name.rsplit(".", 1)[0] if "." in name else name


def msa_tensors(aln: Alignment) -> tuple[torch.Tensor, torch.Tensor]:
    """``(codes [N, L], deletions int32 [N, L])`` over the query's residue columns: the
    columns and :meth:`~torchmsa.Alignment.deletion_matrix` that AlphaFold reads."""
    deletions = aln.deletion_matrix()
    codes = aln.codes
    if deletions.shape[1] != aln.width:
        codes = codes[:, codes[0] != aln.alphabet.gap_code]
    return codes, deletions


def default_item(aln: Alignment) -> dict[str, Any]:
    """``{"name", "msa": int64 [N, L], "deletion_matrix": float32 [N, L]}`` (module
    docstring); ``name`` is ``aln.metadata["name"]``."""
    codes, deletions = msa_tensors(aln)
    return {
        "name": aln.metadata.get("name", ""),
        "msa": codes.long(),
        "deletion_matrix": deletions.float(),
    }


class MSADataset(Dataset):
    """The MSA files of a folder (or a list of files), one alignment per item.

    Arguments:
        folder_or_paths: a folder (its files with an MSA suffix, ``.gz`` too, sorted by
            name; not its subfolders), one file, or a sequence of files.
        max_seqs: keep the first ``max_seqs`` rows (the query first); ``None`` keeps all.
            For another choice, pass a ``transform`` that calls ``aln.select_diverse(n)``
            or ``aln.filter(...)``.
        transform: ``Alignment -> item``; :func:`default_item` when ``None``. The alignment's
            ``metadata["name"]`` is the file name without its suffixes.
        device: where the alignment's tensors go before ``transform`` (``None``: the CPU).
            With ``num_workers > 0`` keep it ``None`` and move batches in the training loop.
        format: the files' format (``None``: guessed for each file).
        seqtype: ``"auto"``, ``"protein"``, ``"dna"`` or ``"rna"``.
    """

    def __init__(
        self,
        folder_or_paths: str | os.PathLike | Sequence[str | os.PathLike],
        *,
        max_seqs: int | None = None,
        transform: Callable[[Alignment], Any] | None = None,
        device: str | torch.device | None = None,
        format: str | None = None,
        seqtype: str = "auto",
    ):
        if isinstance(folder_or_paths, (str, os.PathLike)):
            root = Path(folder_or_paths)
            if root.is_dir():
                paths = sorted(p for p in root.iterdir() if _is_msa(p))
            elif root.is_file():
                paths = [root]
            else:
                raise EmptyInputError(f"{str(root)!r} is neither a folder nor a file; check it")
        else:
            paths = [Path(p) for p in folder_or_paths]
        if not paths:
            raise EmptyInputError(
                f"no MSA files in {str(folder_or_paths)!r} (suffixes {', '.join(MSA_SUFFIXES)}, "
                f"optionally .gz); give a folder that holds some, or a list of files"
            )
        if max_seqs is not None and (
            isinstance(max_seqs, bool) or not isinstance(max_seqs, int) or max_seqs < 1
        ):
            raise ArgumentError(
                f"Invalid value for `max_seqs` argument: {max_seqs!r}; use a positive count or None"
            )
        self.paths = paths
        self.max_seqs = max_seqs
        self.transform = transform
        self.device = None if device is None else torch.device(device)
        self.format = format
        self.seqtype = seqtype

    def __len__(self) -> int:
        return len(self.paths)

    def read(self, index: int) -> Alignment:
        """The alignment of file ``index``, cut to ``max_seqs`` rows and on ``device``."""
        path = self.paths[index]
        aln = Alignment.read(path, self.format, seqtype=self.seqtype)
        if self.max_seqs is not None and len(aln) > self.max_seqs:
            aln = aln.subset(range(self.max_seqs))
        aln.metadata["name"] = _name(path)
        return aln if self.device is None else aln.to(self.device)

    def __getitem__(self, index: int) -> Any:
        aln = self.read(index)
        return (self.transform or default_item)(aln)


def _pad(values: list[torch.Tensor], fill, key: str) -> torch.Tensor:
    if len({v.ndim for v in values}) > 1 or len({v.dtype for v in values}) > 1:
        raise ArgumentError(
            f"collate: the items' {key!r} tensors differ in rank or dtype "
            f"({sorted({(v.ndim, str(v.dtype)) for v in values})}); make them agree"
        )
    shape = [len(values), *(max(s) for s in zip(*(v.shape for v in values)))]
    out = torch.full(shape, fill, dtype=values[0].dtype, device=values[0].device)
    for k, v in enumerate(values):
        out[(k, *(slice(0, s) for s in v.shape))] = v
    return out


def collate(
    batch: Sequence[Mapping[str, Any]],
    *,
    pad_values: Mapping[str, Any] | None = None,
    mask_key: str = "msa",
) -> dict[str, Any]:
    """Pad a list of items into one batch, for ``DataLoader(collate_fn=collate)``.

    Every tensor entry is padded at the end of each dimension to the batch's largest size and
    stacked (``[B, N, L]`` for ``[N, L]`` tensors, ``[B, L]`` for ``[L]``); pad values are
    ``pad_values[key]``, else 0. Other entries become lists. From the ``mask_key`` tensor's
    ``[N, L]`` shapes come ``row_mask`` (bool ``[B, N]``), ``col_mask`` (bool ``[B, L]``) and,
    unless an item has one, ``msa_mask`` (bool ``[B, N, L]``): True on real entries.

    Arguments:
        batch: the items (mappings with the same keys).
        pad_values: a pad value per key (e.g. ``{"msa": 28}``, a padding token).
        mask_key: the ``[N, L, ...]`` entry that gives the masks (``None``: no masks).

    Returns:
        The batch as a dict.
    """
    if not batch:
        raise ArgumentError("collate: the batch is empty")
    pads = dict(pad_values or {})
    out: dict[str, Any] = {}
    for key in batch[0]:
        values = [item[key] for item in batch]
        if all(isinstance(v, torch.Tensor) for v in values):
            out[key] = _pad(values, pads.get(key, 0), key)
        else:
            out[key] = values
    if mask_key is not None and mask_key in batch[0]:
        shapes = [tuple(item[mask_key].shape[:2]) for item in batch]
        device = batch[0][mask_key].device
        n_max = max(s[0] for s in shapes)
        l_max = max(s[1] for s in shapes)
        n = torch.tensor([s[0] for s in shapes], device=device)
        length = torch.tensor([s[1] for s in shapes], device=device)
        rows = torch.arange(n_max, device=device)[None, :] < n[:, None]
        cols = torch.arange(l_max, device=device)[None, :] < length[:, None]
        out["row_mask"], out["col_mask"] = rows, cols
        if "msa_mask" not in out:
            out["msa_mask"] = rows[:, :, None] & cols[:, None, :]
    return out
