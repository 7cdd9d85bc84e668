"""Exception types raised by torchmsa.

Every error a user can cause is a subclass of :class:`ValueError` (bad input, bad argument) or
:class:`RuntimeError` (a resource or device problem), and its message names the thing, the value
and what to do about it, on one line (the command line prints ``str(exc)``). The types with
fields can be pickled, so they cross process boundaries intact. :func:`check_codes` is the one
input check that the numba code and the Triton launchers share (both may import this module).
"""

from __future__ import annotations

__all__ = [
    "TorchMSAError",
    "InputError",
    "InvalidCharacterError",
    "EmptyInputError",
    "FormatError",
    "InputLimitError",
    "AlphabetError",
    "ArgumentError",
    "DistributedError",
    "JobsFailed",
    "ScoringError",
    "DeviceError",
    "ResourceError",
    "check_codes",
]


class TorchMSAError(Exception):
    """Base class of every torchmsa exception."""


class InputError(TorchMSAError, ValueError):
    """The sequences or files given to torchmsa cannot be used as they are."""


class InvalidCharacterError(InputError):
    """A sequence holds a character that its alphabet does not allow.

    Attributes:
        name: the sequence's name (its FASTA id).
        index: the sequence's 0-based index in the input.
        position: the 1-based position of the character in the sequence as given.
        character: the offending character.
        alphabet: the name of the alphabet the sequence was checked against.
    """

    def __init__(self, name: str, index: int, position: int, character: str, alphabet: str):
        self.name = name
        self.index = index
        self.position = position
        self.character = character
        self.alphabet = alphabet
        nucleotide = alphabet in ("dna", "rna")
        unknown = "'N' for an unknown base" if nucleotide else "'X' for an unknown amino acid"
        super().__init__(
            f"sequence {name!r} (#{index + 1}) has invalid character {character!r} at position "
            f"{position} for the {alphabet} alphabet; remove or replace it (use {unknown}), or "
            f"pass seqtype= if the alphabet was detected wrongly"
        )

    def __reduce__(self):
        return (
            type(self),
            (self.name, self.index, self.position, self.character, self.alphabet),
        )


class EmptyInputError(InputError):
    """There are no sequences (or too few) to work on."""


class FormatError(InputError):
    """A file cannot be read or written in the requested format."""


class InputLimitError(InputError):
    """An input is larger than a limit of :class:`torchmsa.io.InputLimits`; reading stopped
    there instead of filling memory.

    Attributes:
        source: the input's name (a path, ``<stdin>``, ...).
        field: the limit, ``"max_input_bytes"`` or ``"max_sequences"``.
        limit: its value.
    """

    def __init__(self, source: str, field: str, limit: int):
        self.source = source
        self.field = field
        self.limit = limit
        unit = "bytes" if field == "max_input_bytes" else "sequences"
        flag = "--" + field.replace("_", "-")
        super().__init__(
            f"{source}: more than {limit:,} {unit} of input, the limit set by "
            f"InputLimits.{field}; raise it (command line: {flag}), or split the input"
        )

    def __reduce__(self):
        return (type(self), (self.source, self.field, self.limit))


class AlphabetError(InputError):
    """Sequences of different alphabets were mixed, or an unknown alphabet was asked for."""


class ArgumentError(TorchMSAError, ValueError):
    """An argument has a value torchmsa does not accept."""


class ScoringError(ArgumentError):
    """A substitution matrix or gap cost cannot be used."""


class DeviceError(TorchMSAError, RuntimeError):
    """A requested device or backend does not exist or cannot run this operation."""


class ResourceError(TorchMSAError, RuntimeError):
    """A problem does not fit in the memory available for it.

    Attributes:
        what: the stage or buffer that does not fit.
        needed: bytes it needs.
        available: bytes that were available.
    """

    def __init__(self, what: str, needed: int, available: int, hint: str = ""):
        self.what = what
        self.needed = needed
        self.available = available
        self.hint = hint
        msg = (
            f"{what} needs {needed / 2**20:.1f} MiB but only {available / 2**20:.1f} MiB "
            f"are available"
        )
        super().__init__(msg + (f"; {hint}" if hint else ""))

    def __reduce__(self):
        return (type(self), (self.what, self.needed, self.available, self.hint))


class DistributedError(TorchMSAError, RuntimeError):
    """The ranks of a distributed run cannot go on together: a rank stopped or failed, a
    host cannot be reached, or the ranks were not started alike."""


class JobsFailed(TorchMSAError, RuntimeError):
    """Some inputs of a distributed ``align_many`` failed; the others were aligned.

    Raised on every rank, after every rank finished.

    Attributes:
        errors: input index -> the exception that input raised.
        results: one entry per input: its :class:`~torchmsa.Alignment`, ``None`` where it
            failed.
    """

    def __init__(self, errors: dict, results: list):
        self.errors = dict(errors)
        self.results = list(results)
        shown = sorted(self.errors)[:3]
        detail = "; ".join(f"input {i}: {_one_line(self.errors[i])}" for i in shown)
        more = f"; and {len(self.errors) - len(shown)} more" if len(self.errors) > 3 else ""
        super().__init__(
            f"{len(self.errors)} of {len(self.results)} inputs failed ({detail}{more}); the "
            f"others were aligned: this error's `results` holds them (None where one failed)"
        )

    def __reduce__(self):
        return (type(self), (self.errors, self.results))


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


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
