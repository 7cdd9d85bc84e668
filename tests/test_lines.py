"""``cpu/lines.py``: gapped lines and whole FASTA files from codes, against plain Python, on
any number of threads."""

from __future__ import annotations

import numpy as np
import pytest

from torchmsa.cpu.lines import ROWS_PER_TASK, fasta_file, gapped_lines

GAP = 27


def _case(n: int, width: int, seed: int):
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 20, (n, width)).astype(np.uint8)
    codes[rng.random((n, width)) < 0.3] = GAP
    lengths = (codes != GAP).sum(axis=1)
    alphabet = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWYacdefghikl", np.uint8)
    letters = bytes(alphabet[rng.integers(0, 30, int(lengths.sum()))])
    heads = [f"s{i} d\u00e9sc {i % 7}" if i % 5 == 0 else f"s{i}" for i in range(n)]
    return codes, lengths, letters, heads


def _oracle(codes, lengths, letters, heads) -> bytes:
    out, p = [], 0
    for row, k, head in zip(codes.tolist(), lengths.tolist(), heads):
        mine = iter(letters[p : p + k].decode())
        p += k
        line = "".join("-" if c == GAP else next(mine) for c in row)
        out.append(f">{head}\n{line}\n")
    return "".join(out).encode()


@pytest.mark.parametrize("threads", [1, 3])
def test_fasta_file_is_the_plain_python_text_on_any_thread_count(threads):
    n = 2 * ROWS_PER_TASK + 17  # three tasks, the last one short
    codes, lengths, letters, heads = _case(n, 9, 4)
    encoded = [h.encode() for h in heads]
    sizes = np.array([len(h) for h in encoded])
    got = fasta_file(codes, GAP, letters, lengths, b"".join(encoded), sizes, threads)
    assert got.dtype == np.uint8 and got.ndim == 1
    got = got.tobytes()
    assert got == _oracle(codes, lengths, letters, heads)
    lines = gapped_lines(codes, GAP, letters, lengths)
    assert lines.tobytes() == b"".join(got.split(b"\n")[1::2][k] + b"\n" for k in range(n))


def test_fasta_file_names_a_row_whose_codes_miss_its_letters():
    codes, lengths, letters, heads = _case(ROWS_PER_TASK + 5, 6, 1)
    wrong = lengths.copy()
    k = ROWS_PER_TASK + 2
    wrong[k] += 1
    wrong[k + 1] -= 1  # the same total: only the rows disagree
    sizes = np.array([len(h.encode()) for h in heads])
    heads_bytes = "".join(heads).encode()
    with pytest.raises(ValueError, match=f"row {k} of the codes"):
        fasta_file(codes, GAP, letters, wrong, heads_bytes, sizes, 2)
    with pytest.raises(ValueError, match="letters for rows of"):
        fasta_file(codes, GAP, letters[:-1], lengths, heads_bytes, sizes, 1)
