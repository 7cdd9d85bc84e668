"""Profile scoring of a job: the integer matrix and gap costs of the progressive pass and the
refinement, and the matrix offset that grows with the job's size."""

from __future__ import annotations

import math

import numpy as np
import torch

from torchmsa.config import ScoringConfig
from torchmsa.constants import RES_ONE
from torchmsa.errors import ScoringError
from torchmsa.progressive import ProfileScoring
from torchmsa.scoring import gap_cost, load_matrix

__all__ = ["SCORE_SCALE", "DEFAULT_MATRIX", "job_offset", "profile_scoring"]

SCORE_SCALE = 256  # DP units per matrix unit: gap costs may be fractions (resolution 1/256)
DEFAULT_MATRIX = {"protein": "BLOSUM62", "dna": "NUC.4.4", "rna": "NUC.4.4"}
DEFAULT_GAP_OPEN = 11  # what ScoringConfig's None gap costs stand for
DEFAULT_GAP_EXTEND = 0
MAX_MATRIX_UNITS = 1 << 13  # keeps P_a M P_bᵀ below 2^51 (see ops.colscores.column_scores)


def job_offset(alphabet, n: int, *, config: ScoringConfig | None = None) -> float:
    """The matrix offset for a job of ``n`` sequences: ``config.offset``, plus
    ``config.offset_per_decade`` per tenfold above ``config.offset_from`` sequences, at most
    ``config.offset_max`` (a multiple of 1/:data:`SCORE_SCALE`).

    Arguments:
        alphabet: the job's alphabet (every alphabet has the same rule).
        n: the job's sequence count.
        config: the scoring settings (``None``: the defaults).
    """
    config = ScoringConfig() if config is None else config
    base = config.offset
    if n <= config.offset_from:
        return base
    grown = base + config.offset_per_decade * math.log10(n / config.offset_from)
    return float(min(max(base, config.offset_max), round(grown * SCORE_SCALE) / SCORE_SCALE))


def profile_scoring(
    alphabet,
    matrix=None,
    gap_open=None,
    gap_extend=None,
    offset=None,
    *,
    config: ScoringConfig | None = None,
) -> ProfileScoring:
    """The integer profile scoring for ``alphabet``.

    Scores are in units of 1/:data:`SCORE_SCALE` of the matrix's own units, so gap costs may
    be fractions (resolution 1/256). ``offset`` is added to every matrix entry (the matrix's
    offset; :func:`job_offset` gives the one a job uses).

    Arguments:
        alphabet: the alphabet whose codes index the matrix.
        matrix, gap_open, gap_extend, offset: override ``config``'s values where not ``None``
            (``matrix`` may also be a Biopython ``Array``).
        config: the scoring settings (``None``: the defaults). Its ``None`` matrix is
            :data:`DEFAULT_MATRIX`'s for the alphabet, its ``None`` gap costs 11 and 0.
    """
    config = ScoringConfig() if config is None else config
    matrix = config.matrix if matrix is None else matrix
    gap_open = config.gap_open if gap_open is None else gap_open
    gap_extend = config.gap_extend if gap_extend is None else gap_extend
    offset = config.offset if offset is None else offset
    _, table, scale = load_matrix(
        DEFAULT_MATRIX[alphabet.name] if matrix is None else matrix, alphabet
    )
    unit = SCORE_SCALE / scale
    g_open = gap_cost(DEFAULT_GAP_OPEN if gap_open is None else gap_open, "gap_open")
    g_ext = gap_cost(DEFAULT_GAP_EXTEND if gap_extend is None else gap_extend, "gap_extend")
    if g_ext > g_open:
        raise ScoringError(
            f"gap_extend ({g_ext}) is larger than gap_open ({g_open}); torchmsa needs "
            f"gap_extend <= gap_open"
        )
    if g_open * SCORE_SCALE * RES_ONE >= 1 << 31:
        raise ScoringError(
            f"Invalid value for `gap_open` argument: {g_open:g}; profile alignment needs gap "
            f"costs below {(1 << 31) // (SCORE_SCALE * RES_ONE)} matrix units"
        )
    mat = torch.round(torch.from_numpy(table.astype(np.float64)) * unit + offset * SCORE_SCALE)
    if float(mat.abs().max()) >= MAX_MATRIX_UNITS:
        raise ScoringError(
            f"matrix entries up to {float(mat.abs().max()) / SCORE_SCALE:g} are too large for "
            f"exact profile scores (limit {MAX_MATRIX_UNITS // SCORE_SCALE}); scale it down"
        )
    return ProfileScoring(
        mat.to(torch.int64),
        round(g_open * SCORE_SCALE),
        round(g_ext * SCORE_SCALE),
        config.terminal,
        occ_shift=config.occ_shift,
    )
