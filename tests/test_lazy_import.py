"""``import torchmsa`` loads neither torch nor numba nor Triton: each loads when a call needs it
(issue #36), and numba's threading layer is still torchmsa's safe one once numba loads."""

from __future__ import annotations

import os
import subprocess
import sys

import torchmsa


def _python(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip()


def test_import_loads_no_heavy_module():
    out = _python(
        "import sys, torchmsa\n"
        "print(sorted(m for m in ('torch', 'numba', 'triton', 'Bio') if m in sys.modules))"
    )
    assert out == "[]"


def test_numba_imported_later_gets_the_safe_layer():
    out = _python(
        "import torchmsa, numba\n"
        "print(numba.config.THREADING_LAYER, torchmsa.runtime.describe()['threading_layer_source'])"
    )
    assert out == "forksafe torchmsa"


def test_every_public_name_resolves():
    for name in torchmsa.__all__:
        assert getattr(torchmsa, name) is not None
    assert set(torchmsa.__all__) <= set(dir(torchmsa))


def test_matrices_read_without_biopython_align_as_biopython_reads_them():
    import numpy as np
    from Bio.Align import substitution_matrices

    from torchmsa import scoring

    folder = scoring._data_folder()
    for name in substitution_matrices.load():
        ours, theirs = (
            scoring._read_table(os.path.join(folder, name)),
            substitution_matrices.load(name),
        )
        assert ours.alphabet == theirs.alphabet, name
        assert np.array_equal(np.asarray(ours, np.float64), np.asarray(theirs, np.float64)), name


def test_an_align_reads_and_writes_fasta_without_biopython_align():
    out = _python(
        "import sys, torchmsa\n"
        "aln = torchmsa.align({'a': 'MKVLAAGIVG', 'b': 'MKVLSAGIVG', 'c': 'MKALAAGVVG'})\n"
        "import io; aln.write(io.StringIO(), format='fasta')\n"
        "print('Bio.Align' in sys.modules)"
    )
    assert out == "False"


def test_a_default_align_loads_neither_accurate_mode_nor_biopython():
    out = _python(
        "import sys, torchmsa\n"
        "seqs = {'a': 'MKVLAAGIVG', 'b': 'MKVLSAGIVG', 'c': 'MKALAAGVVG'}\n"
        "torchmsa.align(seqs, mode='default', device='cpu')\n"
        "loaded = ('Bio', 'torchmsa.consistency', 'torchmsa.pipeline.accurate', "
        "'torchmsa.features.identity')\n"
        "print(sorted(m for m in loaded if m in sys.modules))"
    )
    assert out == "[]"
