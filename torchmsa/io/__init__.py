"""Reading sequences and alignments, writing alignments. Biopython does most of the parsing.

Reading accepts a path, ``"-"`` (standard input) or an open handle (text or binary), in chunks
that stop at :class:`InputLimits` (4 GiB and 10^8 sequences by default) with
:class:`~torchmsa.errors.InputLimitError` instead of filling memory. Gzip input is recognised
by its magic bytes whatever the file is called. A UTF-8 byte-order mark, CRLF and CR line ends
and blank lines before the first record are accepted.

=========== ========================== ===============================================
format      read                       notes
=========== ========================== ===============================================
fasta       sequences, alignments      ``.fa .fasta .fas .faa .fna .ffn .seq .txt``
a2m / a3m   sequences, alignments      lowercase letters are insertions; in A3M
                                       insert columns are implicit, ``#`` lines before
                                       the first record and HH-suite ``ss_*`` rows are
                                       skipped
stockholm   sequences, alignments      ``.sto .stk .stockholm``; ``#=GS name DE text``
                                       is the description
clustal     sequences, alignments      ``.aln .clustal .clw``
phylip      sequences, alignments      relaxed PHYLIP: names of any length, no spaces
=========== ========================== ===============================================

The format is taken from the content when it says (``# STOCKHOLM``, a ``CLUSTAL`` header, a
PHYLIP count line, a ``>`` header), else from the file name (:func:`guess_format`). Writing
takes it from the file name, else FASTA (:func:`output_format`).

Writing: ``fasta`` writes each header line byte for byte as it was read (leading, trailing
and Unicode whitespace included); ``a3m`` too, with the query's gap columns as lowercase
insertions (A3M gives case a meaning, so input case is not kept there); ``stockholm`` keeps
descriptions as ``#=GS DE`` lines; ``clustal`` and ``phylip`` carry sequence ids only. A name
or header a format cannot hold exactly (too long, with spaces or characters it would change,
repeated where it must be unique) raises :class:`~torchmsa.errors.FormatError` naming the
sequence: nothing is truncated or renamed silently. Files are replaced whole: a failed write
leaves no partial file, and the output may be the input.
"""

from torchmsa.io.formats import READ_FORMATS, WRITE_FORMATS, guess_format, output_format
from torchmsa.io.read import read_alignment, read_sequences
from torchmsa.io.sources import InputLimits
from torchmsa.io.write import (
    a3m_rows,
    check_writable,
    format_alignment,
    write_alignment,
    write_encoded,
    write_file,
    write_stdout,
)

__all__ = [
    "READ_FORMATS",
    "WRITE_FORMATS",
    "InputLimits",
    "read_sequences",
    "read_alignment",
    "write_alignment",
    "write_encoded",
    "format_alignment",
    "check_writable",
    "a3m_rows",
    "guess_format",
    "output_format",
    "write_file",
    "write_stdout",
]
