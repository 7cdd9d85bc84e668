"""The one check of residue-code inputs that the k-mer and LCS implementations share."""

from __future__ import annotations

from torchmsa.errors import ArgumentError

__all__ = ["check_codes"]


def check_codes(codes, lengths) -> None:
    """Raise :class:`ArgumentError` unless ``codes`` is ``uint8 [N, L]`` and ``lengths`` is
    ``[N]`` with every length in ``0 .. L`` (numpy arrays or torch tensors, any device)."""
    if (
        str(codes.dtype) not in ("uint8", "torch.uint8")
        or codes.ndim != 2
        or tuple(lengths.shape) != tuple(codes.shape[:1])
    ):
        raise ArgumentError(
            f"`codes` must be uint8 [N, L] with `lengths` [N]; got {codes.dtype} "
            f"{tuple(codes.shape)} and {tuple(lengths.shape)}"
        )
    if lengths.shape[0] and (int(lengths.min()) < 0 or int(lengths.max()) > codes.shape[1]):
        raise ArgumentError(f"`lengths` must lie in 0..{codes.shape[1]} (the width of `codes`)")
