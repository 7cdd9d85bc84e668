"""A small client for ``torchmsa serve``.

>>> from torchmsa import Client                                  # doctest: +SKIP
>>> c = Client("http://127.0.0.1:8765")                          # doctest: +SKIP
>>> job = c.submit("family.fasta", mode="accurate")              # doctest: +SKIP
>>> c.wait(job)["state"]                                         # doctest: +SKIP
'done'
>>> print(c.result(job, "clustal"))                              # doctest: +SKIP
>>> aln = c.result(job, "alignment")    # a torchmsa.Alignment   # doctest: +SKIP

The server's errors come back as :class:`RequestError` (4xx: the input, an argument, an id;
a ``ValueError``) or :class:`ServerError` (unreachable, 5xx), each carrying the server's
one-line message. Needs ``httpx``.
"""

from __future__ import annotations

import io
import os
import time
from typing import Any

from torchmsa.errors import ArgumentError, TorchMSAError

__all__ = ["Client", "RequestError", "ServerError", "DEFAULT_URL"]

DEFAULT_URL = "http://127.0.0.1:8765"
_FINAL = ("done", "failed", "deleted")


class ServerError(TorchMSAError, RuntimeError):
    """The server cannot be reached, or failed (5xx).

    Attributes:
        status: the HTTP status (0 when there was no answer).
        message: the server's message.
    """

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.status, self.message))


class RequestError(ArgumentError):
    """The server refused the request (4xx): bad input or option, a limit, an unknown id, a
    missing token, a result that is not ready. ``status`` and ``message`` as
    :class:`ServerError`."""

    def __init__(self, status: int, message: str):
        self.status = status
        self.message = message
        super().__init__(message)

    def __reduce__(self):
        return (type(self), (self.status, self.message))


class JobTimeout(TorchMSAError, TimeoutError):
    """:meth:`Client.wait` ran out of time; the job goes on on the server."""


def _fasta(seqs) -> str:
    """FASTA text of anything :func:`torchmsa.align` reads (a path is read here)."""
    if isinstance(seqs, str) and seqs.lstrip().startswith(">"):
        return seqs
    from torchmsa.sequences import as_records

    return "".join(f">{r.description or r.name}\n{r.seq}\n" for r in as_records(seqs))


class Client:
    """Talks to a ``torchmsa serve`` server.

    Arguments:
        url: the server (default ``$TORCHMSA_SERVER``, else ``http://127.0.0.1:8765``).
        token: the bearer token when the server needs one (default ``$TORCHMSA_TOKEN``).
        user: the user name a server without tokens keeps jobs apart by (default
            ``$TORCHMSA_USER``; none: the shared anonymous queue).
        timeout: seconds one request may take.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        user: str | None = None,
        timeout: float = 60.0,
    ):
        try:
            import httpx
        except ImportError:
            raise ArgumentError(
                "torchmsa.Client needs httpx: pip install httpx (or torchmsa[serve])"
            ) from None
        self.url = (url or os.environ.get("TORCHMSA_SERVER") or DEFAULT_URL).rstrip("/")
        token = token if token is not None else os.environ.get("TORCHMSA_TOKEN")
        user = user if user is not None else os.environ.get("TORCHMSA_USER")
        headers = {}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        if user:
            headers["X-TorchMSA-User"] = user
        self._httpx = httpx
        self._http = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def __repr__(self) -> str:
        return f"Client({self.url!r})"

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _call(self, method: str, path: str, **kwargs):
        try:
            r = self._http.request(method, path, **kwargs)
        except self._httpx.TransportError as exc:
            raise ServerError(
                0,
                f"cannot reach the torchmsa server at {self.url} ({type(exc).__name__}: {exc}); "
                f"start it with `torchmsa serve` or give its address (--server URL, "
                f"$TORCHMSA_SERVER)",
            ) from None
        if r.status_code < 400:
            return r
        try:
            message = r.json()["error"]
        except Exception:  # not the server's JSON error: a proxy's page, say
            message = f"HTTP {r.status_code} from {self.url}{path}: {r.text[:200]}"
        error = RequestError if r.status_code < 500 else ServerError
        raise error(r.status_code, message)

    def health(self) -> dict:
        """The server's ``/health`` (status, version, auth, limits, workers)."""
        return self._call("GET", "/health").json()

    def submit(self, seqs, mode: str | None = None, **options: Any) -> str:
        """Queue an alignment; returns the job id.

        Arguments:
            seqs: FASTA text, a path (any format :func:`torchmsa.align` reads), a list of
                strings, a dict of name to sequence, Biopython records.
            mode: ``"auto"``, ``"fast"``, ``"default"`` or ``"accurate"``.
            options: ``tree``, ``matrix``, ``gap_open``, ``gap_extend``, ``seqtype``,
                ``config`` (a list of ``"NAME=VALUE"``), as :func:`torchmsa.align`.
        """
        params: list[tuple[str, str]] = []
        if mode is not None:
            params.append(("mode", mode))
        for key, value in options.items():
            if value is None:
                continue
            values = value if isinstance(value, (list, tuple)) else [value]
            params += [(key, str(v)) for v in values]
        body = _fasta(seqs).encode()
        r = self._call(
            "POST", "/jobs", params=params, content=body, headers={"Content-Type": "text/plain"}
        )
        return r.json()["id"]

    def status(self, job_id: str) -> dict:
        """The job's state, progress, timings, what was shared and where it ran."""
        return self._call("GET", f"/jobs/{job_id}").json()

    def jobs(self, states: list[str] | None = None, limit: int = 100) -> list[dict]:
        """This caller's jobs, newest first."""
        params = [("limit", str(limit))] + [("state", s) for s in states or ()]
        return self._call("GET", "/jobs", params=params).json()["jobs"]

    def wait(self, job_id: str, timeout: float | None = None, poll: float = 0.1) -> dict:
        """Poll until the job is done or failed; its status.

        Raises:
            JobTimeout: still unfinished after ``timeout`` seconds.
        """
        end = None if timeout is None else time.monotonic() + timeout
        delay = min(poll, 0.02)
        while True:
            info = self.status(job_id)
            if info["state"] in _FINAL:
                return info
            if end is not None and time.monotonic() > end:
                raise JobTimeout(
                    f"job {job_id!r} is still {info['state']} after {timeout:g} s; wait longer "
                    f"or fetch it later (torchmsa fetch {job_id})"
                )
            time.sleep(delay)
            delay = min(poll, delay * 2)

    def result(self, job_id: str, format: str = "fasta"):
        """The result as text (``fasta``, ``clustal``, ``stockholm``, ``phylip``, ``a3m``,
        ``newick`` for the guide tree), or as a :class:`torchmsa.Alignment` for
        ``"alignment"`` (rows, names and guide tree; ``weights`` are all 1)."""
        if format != "alignment":
            return self._call("GET", f"/jobs/{job_id}/result", params={"format": format}).text
        fasta = self.result(job_id, "fasta")
        info = self.status(job_id)
        newick = self.result(job_id, "newick") if info.get("n_seqs", 0) > 1 else ""
        return _alignment(fasta, newick, info)

    def view(self, job_id: str) -> str:
        """The result as :func:`torchmsa.view.to_html`'s page."""
        return self._call("GET", f"/jobs/{job_id}/view").text

    def delete(self, job_id: str) -> bool:
        """Delete the job (its input and result); false when the server does not know it."""
        try:
            self._call("DELETE", f"/jobs/{job_id}")
        except RequestError as exc:
            if exc.status == 404:
                return False
            raise
        return True


def _alignment(fasta: str, newick: str, info: dict):
    """An :class:`~torchmsa.Alignment` from the server's FASTA rows and guide tree."""
    import numpy as np
    import torch

    from torchmsa.alignment import Alignment
    from torchmsa.alphabet import encode_batch, resolve_alphabet
    from torchmsa.io import read_alignment
    from torchmsa.tree import from_newick

    records = read_alignment(io.StringIO(fasta), "fasta")
    names = [r.name for r in records]
    ungapped = [r.seq.replace("-", "") for r in records]
    alphabet = resolve_alphabet(info.get("options", {}).get("seqtype", "auto"), ungapped)
    codes, lengths, residues = encode_batch(ungapped, alphabet, names)
    width = len(records[0].seq) if records else 0
    gapped = np.full((len(records), width), alphabet.gap_code, dtype=np.uint8)
    for i, r in enumerate(records):
        at = np.frombuffer(r.seq.encode("ascii"), np.uint8) != ord("-")
        gapped[i, at] = codes[i, : int(lengths[i])]
    tree = from_newick(newick, names) if newick.strip() else None
    metadata = {"mode": info.get("mode"), "job": info.get("id"), "timings": info.get("timings")}
    return Alignment(
        names, [r.description for r in records], residues, torch.from_numpy(gapped), alphabet,
        tree=tree, metadata=metadata,
    )  # fmt: skip
