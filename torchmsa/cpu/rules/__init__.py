"""The profile-merge rules in numba, one file per rule, each the twin of the torch function of
the same name in :mod:`torchmsa.ops.rules` (the same integers, one profile or edge at a time)."""
