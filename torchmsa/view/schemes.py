"""The colour schemes' names, apart from their tables in :mod:`torchmsa.view.colors`: the
command line's parser offers them without loading numpy."""

__all__ = ["SCHEMES"]

SCHEMES = ("clustal", "zappo", "identity", "hydrophobicity")
