"""Log-odds position-specific scoring matrices.

For column c and state s (the 20 standard amino acids ``ARNDCQEGHILKMFPSTWYV``, or the four
bases ``ACGT`` / ``ACGU``), with sequence weights ``w`` (1 each unless given):

    f[c, s] = sum_i w_i [row i holds s at c]          (gaps and other letters count nowhere)
    p[c, s] = (f[c, s] + beta * b[s]) / (sum_s f[c, s] + beta)
    pssm[c, s] = log2(p[c, s] / b[s])                 (bits; 0 in a column without residues)

``beta`` is the pseudocount (1 by default) and ``b`` the background: for proteins the amino-acid
frequencies of Robinson & Robinson (1991), which BLAST uses, normalised to sum to 1; uniform
for nucleotides.
"""

from __future__ import annotations

import torch

from torchmsa.alphabet import Alphabet
from torchmsa.errors import ArgumentError

__all__ = ["ROBINSON_FREQUENCIES", "pssm_states", "pssm"]

# per thousand residues, in the order ARNDCQEGHILKMFPSTWYV
ROBINSON_FREQUENCIES = (
    78.05, 51.29, 44.87, 53.64, 19.25, 42.64, 62.95, 73.77, 21.99, 51.42,
    90.19, 57.44, 22.43, 38.56, 52.03, 71.20, 58.41, 13.30, 32.16, 64.41,
)  # fmt: skip


def pssm_states(alphabet: Alphabet) -> tuple[str, list[int], torch.Tensor]:
    """``(letters, codes, background float64 [S])`` of the PSSM's columns for ``alphabet``."""
    if alphabet.is_nucleotide:
        letters = "ACGU" if alphabet.name == "rna" else "ACGT"
        background = torch.full((4,), 0.25, dtype=torch.float64)
    else:
        letters = "ARNDCQEGHILKMFPSTWYV"
        background = torch.tensor(ROBINSON_FREQUENCIES, dtype=torch.float64)
        background = background / background.sum()
    return letters, [alphabet.letters.index(ch) for ch in letters], background


def pssm(
    codes: torch.Tensor,
    states: list[int],
    background: torch.Tensor,
    *,
    weights: torch.Tensor | None = None,
    pseudocount: float = 1.0,
) -> torch.Tensor:
    """The log-odds PSSM (module docstring).

    Arguments:
        codes: ``[N, C]`` residue codes.
        states: the codes of the PSSM's columns, in order (:func:`pssm_states`).
        background: ``[S]`` background frequencies of those states (positive).
        weights: ``[N]`` sequence weights, or ``None`` for 1 each.
        pseudocount: ``beta`` (non-negative).

    Returns:
        ``float32 [C, S]`` scores in bits, on the codes' device.
    """
    n, width = codes.shape
    device = codes.device
    s = len(states)
    background = torch.as_tensor(background, dtype=torch.float64, device=device)
    if background.shape != (s,) or not bool((background > 0).all()):
        raise ArgumentError(
            f"`background` must hold {s} positive frequencies (one per state); got shape "
            f"{tuple(background.shape)}"
        )
    if not pseudocount >= 0:
        raise ArgumentError(
            f"Invalid value for `pseudocount` argument: {pseudocount!r}; use a value >= 0"
        )
    w = torch.ones(n, dtype=torch.float64, device=device)
    if weights is not None:
        w = torch.as_tensor(weights, device=device).to(torch.float64)
        if w.shape != (n,):
            raise ArgumentError(
                f"`weights` must hold one weight per row ({n}); got shape {tuple(w.shape)}"
            )
    lut = torch.full((256,), s, dtype=torch.long, device=device)
    lut[torch.as_tensor(states, dtype=torch.long, device=device)] = torch.arange(s, device=device)
    freq = torch.zeros(width * (s + 1), dtype=torch.float64, device=device)
    cols = torch.arange(width, device=device) * (s + 1)
    step = max(1, (1 << 22) // max(width, 1))
    for r0 in range(0, n, step):
        idx = cols[None, :] + lut[codes[r0 : r0 + step].long()]
        vals = w[r0 : r0 + step, None].expand(idx.shape)
        freq.index_add_(0, idx.reshape(-1), vals.reshape(-1))
    freq = freq.view(width, s + 1)[:, :s]
    total = freq.sum(1, keepdim=True)
    beta = float(pseudocount)
    prob = (freq + beta * background) / (total + beta).clamp_min(1e-300)
    scores = torch.log2(prob / background)
    empty = (total + beta) <= 0
    return torch.where(empty, torch.zeros_like(scores), scores).to(torch.float32)
