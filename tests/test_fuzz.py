"""Fuzz suite (issue #43): bad, odd and mutated inputs through the API and the command line.

For each input, ``torchmsa.align`` and ``torchmsa align`` either succeed, with the names in input
order, every header line byte for byte and the residues of the input (gaps removed), or fail
with a :mod:`torchmsa.errors` type (API) and exactly one ``torchmsa: error:`` line, exit status
2, no traceback and no output file (CLI). Nothing may hang. The command line runs in-process
for speed; a few cases go through real subprocesses. ``TORCHMSA_FUZZ=N`` runs N cases instead
of the CI's few hundred; ``TORCHMSA_FUZZ_SEED`` changes the seed.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fuzz_inputs import Case, cases

import torchmsa
from torchmsa.cli import main
from torchmsa.errors import FormatError, InputLimitError, TorchMSAError
from torchmsa.io import InputLimits, read_alignment, read_sequences
from torchmsa.sequences import SequenceBatch

COUNT = int(os.environ.get("TORCHMSA_FUZZ") or 220)
SEED = int(os.environ.get("TORCHMSA_FUZZ_SEED", "43"))
CASES = cases(COUNT, SEED)
OUT_FORMATS = {7: ".aln", 11: ".sto", 13: ".a3m", 17: ".phy"}
HANG_SECONDS = 120


@contextlib.contextmanager
def deadline(seconds: float, what: str):
    def hang(signum, frame):
        raise TimeoutError(f"{what} ran past {seconds} s (a hang?)")

    old = signal.signal(signal.SIGALRM, hang)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run_cli(argv: list[str]) -> tuple[int, bytes, str]:
    """``torchmsa.cli.main(argv)`` with stdout and stderr captured as UTF-8 bytes."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    out.flush()
    err.flush()
    return code, out.buffer.getvalue(), err.buffer.getvalue().decode("utf-8")


def check_cli_error(code: int, err: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err, err
    assert err.startswith("torchmsa: error: ") and err.endswith("\n"), err
    assert err.count("\n") == 1, err


def residues(row: str) -> str:
    return row.replace("-", "").replace(".", "")


def expected_records(case: Case, path: Path):
    """``(name, header, residues)`` per sequence: the generator's own when it wrote a valid
    file, else the reader's (``None`` when the reader refuses the file)."""
    if case.records is not None:
        return list(case.records)
    try:
        records = read_sequences(path)
    except TorchMSAError:
        return None
    return [(r.name, r.description, residues(r.seq)) for r in records]


def fasta_output(data: bytes) -> tuple[list[str], list[str]]:
    """Header lines and rows of our FASTA output (split at LF only: headers may hold U+2028)."""
    heads, rows = [], []
    for line in data.decode("utf-8").split("\n"):
        if line.startswith(">"):
            heads.append(line[1:])
            rows.append("")
        elif line:
            rows[-1] += line
    return heads, rows


def mode_of(k: int) -> str:
    return "accurate" if k % 29 == 5 else "default" if k % 9 == 4 else "fast"


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c.id for c in CASES])
def test_fuzz(k, tmp_path):
    case = CASES[k]
    path = tmp_path / ("input" + case.suffix)
    path.write_bytes(case.data)
    want = expected_records(case, path)
    mode = mode_of(k)

    with deadline(HANG_SECONDS, f"torchmsa.align on {case.id}"):
        try:
            aln, api_error = torchmsa.align(str(path), device="cpu", mode=mode), None
        except TorchMSAError as exc:  # any other type fails the test with its traceback
            aln, api_error = None, exc
    if case.records is not None:
        assert api_error is None, f"valid input refused: {api_error}"
    if aln is not None:
        assert want is not None, "aligned an input the reader refuses"
        assert aln.names == [w[0] for w in want]
        assert aln.descriptions == [w[1] for w in want]
        assert [residues(r) for r in aln.rows] == [w[2] for w in want]
    else:
        assert "\n" not in str(api_error)

    suffix = next((s for m, s in OUT_FORMATS.items() if k % m == 0), ".fasta")
    out = tmp_path / ("out" + suffix)
    argv = ["align", str(path), "-o", str(out), "-q", "--device", "cpu", "--mode", mode]
    with deadline(HANG_SECONDS, f"torchmsa align on {case.id}"):
        code, _, err = run_cli(argv)
    if code != 0:
        check_cli_error(code, err)
        assert not out.exists(), "a failed run left an output file"
        assert suffix != ".fasta" or aln is None, f"the API aligned it, the CLI said {err}"
        return
    assert err == "" and aln is not None, err
    if suffix == ".fasta":
        heads, rows = fasta_output(out.read_bytes())
        assert heads == [w[1] for w in want]
    else:
        back = read_alignment(out)
        assert [r.name for r in back] == [w[0] for w in want]
        rows = [r.seq for r in back]
    fold = str.upper if suffix == ".a3m" else str
    assert [fold(residues(r)) for r in rows] == [fold(w[2]) for w in want]


@pytest.mark.parametrize("k", range(0, len(CASES), 2), ids=[c.id for c in CASES[::2]])
def test_fuzz_other_verbs(k, tmp_path):
    """``read_alignment``, ``torchmsa score`` and ``torchmsa pairwise`` on the same inputs."""
    case = CASES[k]
    path = tmp_path / ("input" + case.suffix)
    path.write_bytes(case.data)
    try:
        rows = read_alignment(path)
        assert len({len(r.seq) for r in rows}) == 1
    except TorchMSAError as exc:
        assert "\n" not in str(exc)
    verb = ["score", str(path), str(path)] if k % 4 == 0 else ["pairwise", str(path), str(path)]
    with deadline(HANG_SECONDS, f"{verb[0]} on {case.id}"):
        code, out, err = run_cli(verb + ([] if k % 4 == 0 else ["--score-only", "--device", "cpu"]))
    if code != 0:
        check_cli_error(code, err)
    else:
        assert err == "" and out


def test_fuzz_cases_cover_every_generator():
    kinds = {c.id.rsplit("-", 1)[0].split("_")[0] for c in CASES}
    assert {"valid", "odd", "identical", "degenerate", "bad", "mutated"} <= kinds


def _endless_writer(target, chunk: bytes):
    """Write ``chunk`` to ``target`` (a path or a binary handle) until the reader goes."""
    try:
        fh = open(target, "wb") if isinstance(target, (str, Path)) else target
        with fh:
            while True:
                fh.write(chunk)
    except (BrokenPipeError, ValueError, OSError):
        pass


def test_endless_fifo_stops_at_the_input_limit(tmp_path):
    fifo = tmp_path / "endless.fasta"
    os.mkfifo(fifo)
    writer = threading.Thread(target=_endless_writer, args=(fifo, b">s\nMKVLAAGIL\n" * 512))
    writer.daemon = True
    writer.start()
    limits = InputLimits(max_input_bytes=3 * 2**20)
    with deadline(60, "reading an endless FIFO"):
        with pytest.raises(InputLimitError, match="max_input_bytes.*--max-input-bytes"):
            SequenceBatch.from_input(str(fifo), limits=limits)
    writer.join(10)
    assert not writer.is_alive()


class _Endless(io.RawIOBase):
    """A handle that never ends: gzip or plain FASTA text, or NUL bytes."""

    def __init__(self, chunk: bytes):
        self.chunk = chunk

    def readable(self):
        return True

    def readinto(self, buf):
        n = min(len(buf), len(self.chunk))
        buf[:n] = self.chunk[:n]
        return n


@pytest.mark.parametrize("limit", [1, 2**16, 2**20 + 7])
def test_endless_handle_stops_at_the_limit(limit):
    handle = io.BufferedReader(_Endless(b">s\nACGT\n" * 1000))
    with pytest.raises(InputLimitError) as err:
        read_sequences(handle, limits=InputLimits(max_input_bytes=limit))
    assert err.value.limit == limit and f"{limit:,} bytes" in str(err.value)


def test_sequence_limit_stops_before_records_are_built(tmp_path):
    path = tmp_path / "many.fa"
    path.write_text(">a\nMK\n" * 1001)
    assert len(read_sequences(path, limits=InputLimits(max_sequences=1001))) == 1001
    with pytest.raises(InputLimitError, match="1,000 sequences.*--max-sequences"):
        read_sequences(path, limits=InputLimits(max_sequences=1000))
    sto = tmp_path / "many.sto"
    sto.write_text("# STOCKHOLM 1.0\n" + "".join(f"s{k} MK\n" for k in range(5)) + "//\n")
    with pytest.raises(InputLimitError, match="4 sequences"):
        read_sequences(sto, limits=InputLimits(max_sequences=4))


def test_gzip_bomb_stops_at_the_limit(tmp_path):
    import gzip

    path = tmp_path / "bomb.fa.gz"
    path.write_bytes(gzip.compress(b">a\n" + b"A" * (64 * 2**20), mtime=0))
    assert path.stat().st_size < 2**20
    with pytest.raises(InputLimitError, match="4,194,304 bytes"):
        read_sequences(path, limits=InputLimits(max_input_bytes=4 * 2**20))


def test_dev_zero_is_refused_at_once():
    with deadline(30, "reading /dev/zero"):
        with pytest.raises(FormatError, match="binary data"):
            torchmsa.align("/dev/zero")
        code, _, err = run_cli(["align", "/dev/zero"])
    check_cli_error(code, err)


def _subprocess(argv, stdin=None, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "torchmsa", *argv],
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **kw,
    )


def test_real_processes(tmp_path):
    """A sample through real processes: an endless pipe on stdin stopped at the limit,
    /dev/zero, and fuzz cases (an odd header, binary input, a mutated file)."""
    pipe = _subprocess(["pairwise", "-", "-", "--max-input-bytes", "1MiB"], stdin=subprocess.PIPE)
    feeder = threading.Thread(target=_endless_writer, args=(pipe.stdin, b">s\nMKV\n" * 4096))
    feeder.daemon = True
    feeder.start()
    runs = [pipe, _subprocess(["align", "/dev/zero"])]
    sample = [c for c in CASES if c.id.startswith(("odd", "bad_nul", "mutated"))][:3]
    for k, case in enumerate(sample):
        path = tmp_path / f"in{k}{case.suffix}"
        path.write_bytes(case.data)
        runs.append(_subprocess(["align", str(path), "--device", "cpu", "--mode", "fast"]))
    for k, proc in enumerate(runs):
        if k == 0:  # communicate() would close stdin under the feeder
            proc.wait(timeout=300)
            out, err = proc.stdout.read(), proc.stderr.read()
        else:
            out, err = proc.communicate(timeout=300)
        err = err.decode("utf-8")
        if k < 2 or proc.returncode != 0:
            check_cli_error(proc.returncode, err)
        if k == 0:
            assert "1,048,576 bytes" in err and "--max-input-bytes" in err
        if k >= 2 and proc.returncode == 0:
            want = expected_records(sample[k - 2], tmp_path / f"in{k - 2}{sample[k - 2].suffix}")
            assert fasta_output(out)[0] == [w[1] for w in want]
