"""Looking at an alignment: a self-contained HTML page, a PNG overview, a notebook preview.

>>> from torchmsa.view import load, to_html, to_png   # doctest: +SKIP
>>> aln = load("family.aln.fasta")                    # doctest: +SKIP
>>> open("family.html", "w").write(to_html(aln, tree=True))  # doctest: +SKIP
>>> to_png(aln, "family.png")                         # doctest: +SKIP

On the command line: ``torchmsa view ALN [-o out.html|out.png] ...`` (:mod:`torchmsa.view.cli`).
"""

from typing import TYPE_CHECKING

from torchmsa.lazy import lazy_attributes

# each name from its module on first use: building the command line's parser (which reads
# ``view``'s options) then imports neither torch nor the page and image code
_WHERE = {
    "SCHEMES": "schemes",
    "LoadedAlignment": "model",
    "add_parser": "cli",
    "load": "model",
    "parse_region": "model",
    "parse_rows": "model",
    "repr_html": "html",
    "run": "cli",
    "to_html": "html",
    "to_png": "png",
}

__all__ = [
    "SCHEMES",
    "LoadedAlignment",
    "add_parser",
    "load",
    "parse_region",
    "parse_rows",
    "repr_html",
    "run",
    "to_html",
    "to_png",
]

if TYPE_CHECKING:
    from torchmsa.view.cli import add_parser, run
    from torchmsa.view.html import repr_html, to_html
    from torchmsa.view.model import LoadedAlignment, load, parse_region, parse_rows
    from torchmsa.view.png import to_png
    from torchmsa.view.schemes import SCHEMES


__getattr__, __dir__ = lazy_attributes(__name__, _WHERE)
