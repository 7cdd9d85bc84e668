"""``align_many`` over the ranks: each rank aligns its share, every rank gets the whole list.

Every rank calls ``align_many`` with the same inputs (the same paths, readable on every host,
or the same sequences). The ranks first compare a fingerprint of the inputs (paths by name,
sequences by content) and estimate each input's cost (:mod:`~torchmsa.distributed.partition`;
rank ``r`` reads the inputs ``i`` with ``i % size == r``, and the estimates are shared).
Rank 0 cuts the inputs into chunks, costliest first, that the ranks claim as they become
free (:mod:`~torchmsa.distributed.claims`). Each rank aligns a chunk in one local
``align_many`` call on its own device (a chunk that fails is rerun input by input, so one
bad input fails alone), and the results, moved to the host, are gathered on every rank in
input order and moved to that rank's device.

Under ``distributed="auto"``, ranks that pass different inputs (each aligning its own, as a
data-parallel program does) are left to do so: every rank then runs locally. Under
``distributed=True`` that is an error.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import time
from collections.abc import Callable

from torchmsa.distributed.claims import Claims, guided
from torchmsa.distributed.partition import cost_rule
from torchmsa.distributed.session import DEFAULT_TIMEOUT_S, DistributedError, session
from torchmsa.distributed.world import World
from torchmsa.errors import ArgumentError, JobsFailed

__all__ = ["JobsFailed", "align_over_ranks", "compact"]

log = logging.getLogger("torchmsa.distributed")


def _line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def compact(indices: list[int]) -> str:
    """Indices as runs: ``[0, 1, 2, 5, 7, 8]`` -> ``"#0-2, #5, #7-8"``.

    >>> compact([0, 1, 2, 5, 7, 8])
    '#0-2, #5, #7-8'
    """
    runs: list[list[int]] = []
    for i in sorted(indices):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ", ".join(f"#{a}" if a == b else f"#{a}-{b}" for a, b in runs) or "none"


def _is_path(x) -> bool:
    return isinstance(x, (str, os.PathLike))


def _describe(inputs: list) -> tuple[str, list]:
    """A fingerprint of the inputs, and each input's records (``None`` for paths: the rank
    that estimates its cost reads it)."""
    from torchmsa.sequences import as_records

    h = hashlib.sha256(f"{len(inputs)}\0".encode())
    records: list = []
    for x in inputs:
        if hasattr(x, "read") or (isinstance(x, str) and x == "-"):
            raise ArgumentError(
                "align_many over several ranks reads each input on the rank that aligns it: "
                "an open file or standard input belongs to one process; pass paths or "
                "sequences, or distributed=False"
            )
        if _is_path(x):
            h.update(f"path\0{os.fspath(x)}\0".encode())
            records.append(None)
            continue
        recs = as_records(x)
        h.update(f"seqs\0{len(recs)}\0".encode())
        for r in recs:
            h.update(f"{r.name}\0{r.seq}\0".encode())
        records.append(recs)
    return h.hexdigest(), records


def _cost(x, recs, cost_of) -> float:
    """One input's cost (0 when it cannot be read: aligning it reports why)."""
    from torchmsa.sequences import as_records

    try:
        recs = as_records(x) if recs is None else recs
    except Exception:  # noqa: BLE001 - reported by the rank that aligns it
        return 0.0
    return cost_of(len(recs), max((len(r.seq) for r in recs), default=0))


def _portable(exc: Exception) -> Exception:
    """``exc`` itself when it pickles (torchmsa's errors do), else a ``RuntimeError`` with
    its type and message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001
        return RuntimeError(_line(exc))


def _align_share(share: list[int], inputs: list, trees: list | None, run, device) -> list:
    """``(index, alignment on the host or None, error or None)`` for each input of ``share``."""
    pick = (lambda idx: None) if trees is None else (lambda idx: [trees[i] for i in idx])
    try:
        alns = run([inputs[i] for i in share], pick(share), device) if share else []
        return [(i, a.to("cpu"), None) for i, a in zip(share, alns)]
    except Exception as exc:  # noqa: BLE001 - rerun one by one so that one bad input fails alone
        if len(share) == 1:
            return [(share[0], None, _portable(exc))]
    out = []
    for i in share:
        try:
            (a,) = run([inputs[i]], pick([i]), device)
            out.append((i, a.to("cpu"), None))
        except Exception as exc:  # noqa: BLE001
            out.append((i, None, _portable(exc)))
    return out


def align_over_ranks(
    world: World,
    inputs: list,
    run: Callable[[list, list | None, object], list],
    *,
    config,
    device="auto",
    first_trees: list | None = None,
    strict: bool = False,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> list | None:
    """:func:`torchmsa.align_many`'s inputs aligned over the ranks (see the module
    docstring).

    Arguments:
        world: this rank's world.
        inputs: every input, the same on every rank.
        run: ``run(inputs, first_trees, device)``: a local ``align_many`` of a share.
        config: the effective :class:`~torchmsa.config.AlignConfig` (for the cost model).
        device: as ``align_many``'s; ``"auto"`` / ``"cuda"`` is the rank's own GPU.
        first_trees: ``align_many``'s, one per input, or ``None``.
        strict: ranks with different inputs are an error (``distributed=True``); else each
            rank aligns its own inputs locally: ``None`` is returned for that.
        timeout_s: how long a rank waits for a silent peer.

    Returns:
        Every input's alignment, input order, on this rank's device; ``None`` when the
        ranks' inputs differ and ``strict`` is false.

    Raises:
        JobsFailed: some inputs failed (on every rank; the others' alignments attached).
        DistributedError: the ranks cannot go on together.
    """
    inputs = list(inputs)
    trees = None if first_trees is None else list(first_trees)
    if trees is not None and len(trees) != len(inputs):
        raise ArgumentError(
            f"Invalid value for `first_trees` argument: {len(trees)} trees for {len(inputs)} "
            "inputs; give one per input (None where the job builds its own)"
        )
    fingerprint, records = _describe(inputs)
    with session(world, device, timeout_s=timeout_s, say=log.info) as s:
        cost_of = cost_rule(config)
        mine = {
            i: _cost(x, records[i], cost_of)
            for i, x in enumerate(inputs)
            if i % s.size == s.rank or records[i] is not None
        }
        told = s.all_gather((fingerprint, mine))
        if any(f != fingerprint for f, _ in told):
            sizes = ", ".join(f"rank {k}: {len(c)}" for k, (_, c) in enumerate(told))
            if strict:
                raise DistributedError(
                    f"{s.tag}: align_many(distributed=True) spreads one list of inputs over the "
                    f"ranks, but the ranks passed different inputs (costs estimated: {sizes}); "
                    f"pass the same inputs on every rank, or distributed=False"
                )
            log.info("%s: the ranks passed different inputs; each aligns its own", s.tag)
            return None
        costs = [0.0] * len(inputs)
        for _, c in told:
            for i, v in c.items():
                costs[i] = v
        claims = Claims(s, guided(costs, s.size) if s.leader else None)

        def work(emit) -> list:
            t0, done, share = time.perf_counter(), [], []
            for chunk in claims:
                share += chunk
                done += _align_share(chunk, inputs, trees, run, s.device)
            failed = sum(e is not None for _, _, e in done)
            log.info(
                "%s: aligned %d of %d inputs in %d chunks of %d (%s; est. cost %.3g), "
                "%d failed, %.1f s",
                s.tag, len(share), len(inputs), claims.claimed, claims.count, compact(share),
                sum(costs[i] for i in share), failed, time.perf_counter() - t0,
            )  # fmt: skip
            return done

        done = s.run(work)
        claims.close()
        parts = s.all_gather(done)
    results: list = [None] * len(inputs)
    errors: dict = {}
    for rank, part in enumerate(parts):
        for i, aln, exc in part:
            if exc is not None:
                errors[i] = exc
                continue
            aln.metadata.update(rank=rank, world_size=len(parts))
            results[i] = aln.to(s.device)
    if errors:
        raise JobsFailed(errors, results) from errors[min(errors)]
    if any(r is None for r in results):
        raise DistributedError(f"{s.tag}: results of some inputs never arrived; rerun the call")
    return results
