"""The HTTP face of a :class:`~torchmsa.serve.store.Store`: a FastAPI application.

=========================== ==============================================================
``POST /jobs``              FASTA as the body (``text/plain``, gzip allowed) or a multipart
                            upload (field ``file``, or the text in field ``fasta``); ``mode``
                            and the options as query or form fields. ``201``, the job's JSON
                            and a ``Location`` header; the job is stored before the reply.
``GET /jobs``               the caller's jobs, newest first (``state``, ``limit``)
``GET /jobs/{id}``          state, progress, timings, what was shared, placement
``GET /jobs/{id}/result``   ``format=fasta|clustal|stockholm|phylip|a3m|newick``
``GET /jobs/{id}/view``     the alignment as :func:`torchmsa.view.to_html`'s page
``DELETE /jobs/{id}``       forget the job, its input and its result
``GET /health``             liveness, version, workers
``GET /``, ``/docs``        the web page; the API reference (``/openapi.json``), no network
=========================== ==============================================================

Errors are ``{"error": "<one line>"}`` (the command line's message): 422 bad input or
argument, 413 over the size or count limit, 404 an unknown id (another caller's job too), 409
a result asked for before the job is done, 401 without the bearer token when tokens are set.

Who is calling: with tokens configured, a hash of the bearer token; without, a hash of the
``X-TorchMSA-User`` header, else ``"anonymous"``. Every job call is scoped to that owner, so
one caller never sees another's jobs, inputs or results.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import io
from collections.abc import Iterable
from typing import Annotated

from fastapi import Depends, FastAPI, Header, Query, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException

from torchmsa.errors import TorchMSAError
from torchmsa.serve.body import ApiError, parse_options, read_limited, replayed, submission_text
from torchmsa.serve.commit import GroupCommit
from torchmsa.serve.jobs import JobNotDone, JobNotFound, LimitError
from torchmsa.serve.limits import MAX_BYTES, MAX_SEQS
from torchmsa.serve.page import docs_page, main_page

__all__ = [
    "create_app",
    "prime",
    "ServiceApp",
    "MAX_BYTES",
    "MAX_SEQS",
    "RESULT_FORMATS",
    "owner_of",
]

RESULT_FORMATS = {
    "fasta": "fasta",
    "clustal": "aln",
    "stockholm": "sto",
    "phylip": "phy",
    "a3m": "a3m",
    "newick": "nwk",
}
_STATES = ("queued", "running", "done", "failed")
_INLINE_BYTES = 1 << 16  # a submission this small is checked on the event loop
_CSP = (
    "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; frame-src 'self' blob:; connect-src 'self'; object-src 'none'"
)


def owner_of(token: str | None = None, user: str | None = None) -> str:
    """The owner a store records for a caller: a hash of its token, else of its user name."""
    if token is not None:
        return "token:" + hashlib.sha256(token.encode()).hexdigest()[:32]
    if user:
        return "user:" + hashlib.sha256(user.encode()).hexdigest()[:32]
    return "anonymous"


def _status_of(exc: Exception) -> int:
    if isinstance(exc, JobNotFound):
        return 404
    if isinstance(exc, JobNotDone):
        return 409
    return 413 if isinstance(exc, LimitError) or "limit" in str(exc).lower() else 422


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _job_json(info) -> dict:
    out = {f.name: getattr(info, f.name) for f in dataclasses.fields(info) if f.name != "owner"}
    out["url"] = f"/jobs/{info.id}"
    return out


def prime(store) -> None:
    """Load what checking a submission needs (the configuration, alphabet and scoring
    modules) by checking two tiny jobs, writing nothing: a new HTTP process's first requests
    then pay no imports (seconds, since ``import torchmsa`` is lazy)."""
    for fasta in (">a\nMKVLA\n>b\nMKVLG\n", ">a\nACGTA\n>b\nACGAA\n"):
        store.staged(fasta, {}, "anonymous")


class ServiceApp(FastAPI):
    """The application: FastAPI, except that ``POST /jobs`` goes straight to its handler.

    The busiest route under a burst of submissions skips FastAPI's routing and request
    wrapping (decision 0043). Its responses and errors are the same: the handler is the
    documented route's, and an exception goes to the application's exception handlers.
    Every other request, and the OpenAPI description, are FastAPI's."""

    direct_submit = None  # set by :func:`create_app`: ``async (Request) -> Response``

    async def __call__(self, scope, receive, send) -> None:
        direct = self.direct_submit
        if (
            direct is not None
            and scope["type"] == "http"
            and scope["method"] == "POST"
            and scope["path"] == scope.get("root_path", "") + "/jobs"
        ):
            request = Request(scope, receive)
            try:
                response = await direct(request)
            except Exception as exc:  # noqa: BLE001 - answered as FastAPI would answer it
                response = await self._handled(request, exc)
            await response(scope, receive, send)
            return
        await super().__call__(scope, receive, send)

    async def _handled(self, request: Request, exc: Exception):
        for kind in type(exc).__mro__:
            handler = self.exception_handlers.get(kind)
            if handler is not None:
                return await handler(request, exc)
        raise exc


def create_app(
    store,
    *,
    token: str | Iterable[str] | None = None,
    max_bytes: int = MAX_BYTES,
    max_seqs: int = MAX_SEQS,
    workers=None,
    notify=None,
) -> FastAPI:
    """The service's application over ``store``.

    Arguments:
        store: a :class:`torchmsa.serve.store.Store` (or anything with its methods).
        token: a bearer token, or several (one per user); ``None``: no authentication, the
            owner comes from the ``X-TorchMSA-User`` header.
        max_bytes: the largest request body (after gzip is undone), in bytes (413 above).
        max_seqs: the most sequences in one job (413 above).
        workers: a callable returning the workers' descriptions for ``/health``.
        notify: called after each write that queued jobs (wakes the workers), if given.

    Returns:
        The application, a :class:`ServiceApp` (serve it with uvicorn, or
        :func:`torchmsa.serve.server.serve`).
    """
    from torchmsa import __version__

    tokens = [token] if isinstance(token, str) else list(token or [])
    commits = GroupCommit(store, notify)
    app = ServiceApp(
        title="torchmsa serve",
        version=__version__,
        description="Multiple sequence alignment jobs on a shared GPU/CPU server.",
        docs_url=None,
        redoc_url=None,
    )

    async def caller(
        authorization: Annotated[str | None, Header()] = None,
        x_torchmsa_user: Annotated[str | None, Header()] = None,
    ) -> str:
        if not tokens:
            return owner_of(user=x_torchmsa_user)
        given = (authorization or "").strip()
        if given[:7].lower() == "bearer ":
            secret = given[7:].strip()
            if any(hmac.compare_digest(secret.encode(), t.encode()) for t in tokens):
                return owner_of(token=secret)
        raise ApiError(
            401,
            "this server needs a bearer token: send 'Authorization: Bearer TOKEN' "
            "(torchmsa submit --token, or $TORCHMSA_TOKEN)",
            {"WWW-Authenticate": "Bearer"},
        )

    def find(job_id: str, owner: str):
        info = store.job(job_id, owner=owner)
        if info is None or info.state == "deleted":
            raise ApiError(404, f"no job {job_id!r} here; check the id (GET /jobs lists yours)")
        return info

    @app.exception_handler(ApiError)
    async def _api_error(request, exc: ApiError):
        return JSONResponse({"error": exc.message}, exc.status, headers=exc.headers)

    @app.exception_handler(TorchMSAError)
    async def _torchmsa_error(request, exc: TorchMSAError):
        status = _status_of(exc) if isinstance(exc, ValueError) else 500
        return JSONResponse({"error": _one_line(str(exc))}, status)

    @app.exception_handler(Exception)
    async def _unexpected(request, exc: Exception):
        return JSONResponse({"error": _one_line(f"{type(exc).__name__}: {exc}")}, 500)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request, exc: RequestValidationError):
        first = exc.errors()[0] if exc.errors() else {}
        where = " ".join(str(x) for x in first.get("loc", ()))
        return JSONResponse({"error": _one_line(f"{where}: {first.get('msg', 'invalid')}")}, 422)

    @app.exception_handler(HTTPException)
    async def _http_error(request, exc: HTTPException):
        return JSONResponse({"error": _one_line(exc.detail)}, exc.status_code, headers=exc.headers)

    @app.post(
        "/jobs",
        status_code=201,
        summary="Submit sequences",
        responses={413: {"description": "over the size or count limit"}},
        openapi_extra={
            "parameters": [
                {"name": "authorization", "in": "header", "schema": {"type": "string"}},
                {"name": "x-torchmsa-user", "in": "header", "schema": {"type": "string"}},
            ],
            "requestBody": {
                "content": {
                    "text/plain": {"schema": {"type": "string"}, "example": ">a\nMKV\n>b\nMRV\n"},
                    "multipart/form-data": {
                        "schema": {
                            "type": "object",
                            "properties": {
                                "file": {"type": "string", "format": "binary"},
                                "fasta": {"type": "string"},
                                "mode": {"type": "string"},
                            },
                        }
                    },
                },
                "required": True,
            },
        },
    )
    async def submit(request: Request):
        """Queue an alignment. Options (query or form fields): mode, tree, matrix,
        gap_open, gap_extend, seqtype, config (NAME=VALUE, repeatable)."""
        # the caller from the headers directly: the busiest route skips dependency solving
        headers = request.headers
        owner = await caller(headers.get("authorization"), headers.get("x-torchmsa-user"))
        body = await read_limited(request, max_bytes)
        pairs = list(request.query_params.multi_items())
        kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if kind in ("multipart/form-data", "application/x-www-form-urlencoded"):
            form = await replayed(request, body).form(max_files=1, max_part_size=max_bytes)
            upload = form.get("file")
            if upload is not None and not isinstance(upload, str):
                data = await upload.read()
                if not data:
                    data = str(form.get("fasta") or "").encode()
            else:
                data = str(form.get("fasta") or upload or "").encode()
            pairs += [(k, v) for k, v in form.multi_items() if isinstance(v, str)]
        else:
            data = body
        text = submission_text(data, max_bytes, max_seqs)
        options = parse_options(pairs)
        if len(text) < _INLINE_BYTES:  # small: checked here, on the event loop
            staged = store.staged(text, options, owner)
        else:
            staged = await run_in_threadpool(store.staged, text, options, owner)
        info = await commits.submit(staged)
        return JSONResponse(_job_json(info), 201, headers={"Location": f"/jobs/{info.id}"})

    app.direct_submit = submit

    @app.get("/jobs", summary="The caller's jobs")
    def jobs(
        owner: str = Depends(caller),
        state: Annotated[
            list[str] | None, Query(description="queued, running, done, failed")
        ] = None,
        limit: Annotated[int, Query(ge=1, le=10_000)] = 100,
    ):
        """The caller's jobs, newest first."""
        for s in state or ():
            if s not in _STATES:
                raise ApiError(
                    422, f"Invalid value for `state`: {s!r}; one of {', '.join(_STATES)}"
                )
        found = store.jobs(owner=owner, states=state or None, limit=limit)
        return {"jobs": [_job_json(j) for j in found if j.state != "deleted"]}

    @app.get("/jobs/{job_id}", summary="A job's state")
    def job(job_id: str, owner: str = Depends(caller)):
        """State, progress, timings, what was shared with other jobs, placement."""
        return _job_json(find(job_id, owner))

    @app.get(
        "/jobs/{job_id}/result", summary="A job's alignment or guide tree", response_class=Response
    )
    def result(
        job_id: str,
        owner: str = Depends(caller),
        format: Annotated[str, Query(description=", ".join(RESULT_FORMATS))] = "fasta",
        download: bool = False,
    ):
        """The alignment in `format`, or the guide tree (newick)."""
        if format not in RESULT_FORMATS:
            raise ApiError(
                422,
                f"Invalid value for `format` argument: {format!r}; one of "
                f"{', '.join(RESULT_FORMATS)}",
            )
        info = find(job_id, owner)
        if info.state != "done":
            why = f": {info.error}" if info.state == "failed" and info.error else ""
            raise ApiError(
                409, f"job {job_id!r} is {info.state}{why}; a result comes when it is done"
            )
        text = store.result(job_id, format, owner=owner)
        headers = {}
        if download:
            headers["Content-Disposition"] = (
                f'attachment; filename="{job_id}.{RESULT_FORMATS[format]}"'
            )
        return Response(text, media_type="text/plain; charset=utf-8", headers=headers)

    @app.get(
        "/jobs/{job_id}/view", summary="A job's alignment as a page", response_class=HTMLResponse
    )
    def view(job_id: str, owner: str = Depends(caller), color: str = "clustal", tree: bool = True):
        """The alignment drawn by :mod:`torchmsa.view` (a self-contained page)."""
        from torchmsa.io import read_alignment
        from torchmsa.view import LoadedAlignment, to_html

        info = find(job_id, owner)
        if info.state != "done":
            raise ApiError(409, f"job {job_id!r} is {info.state}; a view comes when it is done")
        records = read_alignment(io.StringIO(store.result(job_id, "fasta", owner=owner)), "fasta")
        aln = LoadedAlignment(
            [r.name for r in records], [r.description for r in records],
            [r.seq for r in records], f"job {job_id}",
        )  # fmt: skip
        newick = False
        if tree and len(records) > 1:
            newick = store.result(job_id, "newick", owner=owner).strip() or False
        page = to_html(aln, color=color, tree=newick, title=f"torchmsa job {job_id}")
        return HTMLResponse(page, headers={"Content-Security-Policy": _CSP})

    @app.delete("/jobs/{job_id}", summary="Delete a job")
    def delete(job_id: str, owner: str = Depends(caller)):
        """Forget the job, its input and its result (a running job's result is dropped)."""
        find(job_id, owner)
        if not store.delete(job_id, owner=owner):
            raise ApiError(404, f"no job {job_id!r} here; check the id (GET /jobs lists yours)")
        return {"id": job_id, "state": "deleted"}

    @app.get("/health", summary="Liveness")
    def health():
        """``ok``, the version, whether a token is needed and the workers."""
        return {
            "status": "ok",
            "version": __version__,
            "auth": "bearer" if tokens else "none",
            "limits": {"max_bytes": max_bytes, "max_seqs": max_seqs},
            "workers": list(workers()) if workers is not None else [],
        }

    @app.get("/", include_in_schema=False)
    def index():
        return HTMLResponse(main_page(), headers={"Content-Security-Policy": _CSP})

    @app.get("/docs", include_in_schema=False)
    def docs():
        return HTMLResponse(docs_page(app.openapi()), headers={"Content-Security-Policy": _CSP})

    return app
