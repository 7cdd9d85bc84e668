"""The hit loop of best-K local alignment (decision 0038), in one process (:func:`topk_one`)
and with the subject's strips shared between ranks (:func:`topk_over_ranks`, decision 0059).

Over ranks, rank ``r`` keeps a contiguous share of the strips (:class:`StripDP` with
``strips=(lo, hi)``, on its own device) and finds, on its own, the successive best hits of
its share: the column before its first strip comes from the rank before it (fix-up rounds
until no rank's column changes). While no hit's recomputation changes the column a rank
hands on, and no hit starts before its rank's first column, each rank's share of the
matrix depends only on its own hits, so the hits of one process are exactly every rank's
hits merged in the tie order; the ranks stop once the ``k`` best are known. A hit of the
``k`` best that breaks either condition (an *event*: rare, a hit within a refill's reach of
a border) sends the job to rank 0 alone, which runs it as one process would. Either way
every rank returns the same hits, those of one process.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import NamedTuple

import numpy as np
import torch

from torchmsa import constants
from torchmsa.cpu import strip as cpu_strip
from torchmsa.errors import ResourceError
from torchmsa.ops.backend import budget_bytes
from torchmsa.ops.local_strips import LocalPlan, StripDP, plan_layout

__all__ = ["LocalHits", "Tracer", "pack_hits", "topk_one", "topk_over_ranks"]


class LocalHits(NamedTuple):
    """The hits of :func:`local_topk_codes`, best first, as CPU tensors.

    Attributes:
        score: ``int32 [K]`` scores.
        query_start, query_end: ``int64 [K]``: hit ``t`` aligns query residues
            ``query_start[t] .. query_end[t] - 1``.
        subject_start, subject_end: the same for the subject.
        n_ops: ``int32 [K]`` ops per hit.
        ops: ``uint8 [K, L]``: hit ``t``'s ops in ``ops[t, :n_ops[t]]`` (``0`` a residue pair,
            ``1`` a query residue against a gap, ``2`` a gap against a subject residue).
        plan: the :class:`LocalPlan` used, every field resolved.
        refilled: strips filled again after the first pass (fix-ups and recomputations).
    """

    score: torch.Tensor
    query_start: torch.Tensor
    query_end: torch.Tensor
    subject_start: torch.Tensor
    subject_end: torch.Tensor
    n_ops: torch.Tensor
    ops: torch.Tensor
    plan: LocalPlan
    refilled: int


class Tracer:
    """The host side of a hit: its traceback in the rectangle that holds it
    (``cpu/strip.py``), and the forbidding of its pairs with the recomputation that follows.

    Arguments:
        q, s: ``uint8`` codes on the work device; mat_np: ``int32 [A, A]``; go, ge: gap costs.
        host_bytes: the memory a traceback rectangle may take.
        backend: ``"cpu"`` or ``"triton"`` (resolved).
    """

    def __init__(self, q, s, mat_np: np.ndarray, go: int, ge: int, host_bytes: int, backend):
        self.q, self.s, self.mat_np, self.go, self.ge = q, s, mat_np, go, ge
        self.host_bytes, self.backend = host_bytes, backend
        self.mat = torch.from_numpy(mat_np).to(q.device)
        self.q_host = q.cpu().numpy()
        self.col_max = mat_np[np.unique(self.q_host)].max(0)  # [A] best score of a subject code

    def trace(self, dp: StripDP, score: int, i_end: int, j_end: int, j_start: int) -> tuple:
        """The hit whose best cell ``(score, i_end, j_end)`` starts at column ``j_start``:
        ``(score, i0, i_end, j0, j_end, ops)``."""
        s_part = self.s[j_start - 1 : j_end].cpu().numpy()
        go, ge = self.go, self.ge
        i_first = cpu_strip.rect_first_row(score, i_end, s_part, self.col_max, go, ge)
        ops, i0, j0, h = cpu_strip.rect_traceback(
            self.q_host[i_first - 1 : i_end], s_part, j_start, self.mat_np, go, ge,
            dp.forbid_ptr, dp.forbid_col, self.host_bytes, i_first,
        )  # fmt: skip
        if h != score or j0 != j_start - 1:
            raise RuntimeError(
                f"internal error: hit ({i_end}, {j_end}) of score {score} starting at column "
                f"{j_start} traces back to score {h} from column {j0 + 1} ({self.backend} "
                f"backend)"
            )
        return score, i0, i_end, j0, j_end, ops

    def forbid(self, dp: StripDP, hit: tuple) -> bool:
        """Forbid ``hit``'s residue pairs and recompute the strips they change; returns
        whether the column after ``dp``'s last strip changed (:meth:`StripDP.recompute`)."""
        score, i0, _, j0, j_end, ops = hit
        match = ops == constants.OP_MATCH
        i = i0 + np.cumsum(ops != constants.OP_LEFT)
        j = j0 + np.cumsum(ops != constants.OP_UP)
        dp.forbid(i[match], j[match])
        return dp.recompute(j0 + 1, j_end, score)


def pack_hits(hits, plan: LocalPlan, refilled: int) -> LocalHits:
    """:class:`LocalHits` of hits ``(score, i0, i_end, j0, j_end, ops)``, best first."""
    K = len(hits)
    width = max([len(h[5]) for h in hits], default=0)
    ops = np.zeros((K, width), np.uint8)
    for t, h in enumerate(hits):
        ops[t, : len(h[5])] = h[5]
    cols = np.array([h[:5] for h in hits], np.int64).reshape(K, 5)
    return LocalHits(
        torch.from_numpy(cols[:, 0].astype(np.int32)),
        *(torch.from_numpy(cols[:, c].copy()) for c in (1, 2, 3, 4)),
        torch.tensor([len(h[5]) for h in hits], dtype=torch.int32),
        torch.from_numpy(ops),
        plan,
        refilled,
    )


def topk_one(tracer: Tracer, k: int, min_score: int, plan: LocalPlan, available: int):
    """Up to ``k`` hits of score ``>= min_score`` in one process, every strip on the work
    device (``available`` bytes there)."""
    q, s = tracer.q, tracer.s
    resolved, chunk = plan_layout(q.shape[0], s.shape[0], plan, tracer.backend, q.device, available)
    dp = StripDP(q, s, tracer.mat, tracer.go, tracer.ge, resolved, chunk, tracer.backend)
    dp.first_pass()
    hits = []
    while len(hits) < k:
        top = dp.top()
        if top[0] < min_score:
            break
        hits.append(tracer.trace(dp, *top))
        if len(hits) == k:
            break
        tracer.forbid(dp, hits[-1])
    return pack_hits(hits, resolved, dp.refilled)


def topk_over_ranks(
    ranks, tracer: Tracer, k: int, min_score: int, plan: LocalPlan, budget, whole=None
):
    """:func:`topk_one`'s hits with the strips shared between ``ranks`` (see the module
    docstring); every rank calls it with the same arguments and gets the same hits.

    Arguments:
        ranks: ``rank``, ``size``, ``all_gather(obj)`` (a ``torchmsa.distributed.Session``;
            its ``say`` and ``tag``, where present, log what the rank did).
        tracer: the query and the whole subject on this rank's work device.
        budget: the memory budget (as ``local_topk_codes`` takes it).
        whole: where ``tracer.s`` holds only the codes this rank's strips and their warm-up
            reach, a function that gives them all (``None``: they are all there).
    """
    t0 = time.perf_counter()
    q, s, me = tracer.q, tracer.s, ranks.rank
    n, m, dev = q.shape[0], s.shape[0], q.device
    available = budget_bytes(budget, dev)
    share = -(-m // ranks.size)
    try:
        own = plan_layout(n, share, plan, tracer.backend, dev, available)[0].strip_width
    except ResourceError as exc:  # every rank raises it, none waits for the others
        own = exc
    widths = ranks.all_gather(own)
    for w in widths:
        if isinstance(w, Exception):
            raise w
    W = max(widths)  # one strip width: the widest any rank needs
    resolved, chunk = plan_layout(
        n, share, replace(plan, strip_width=W), tracer.backend, dev, available
    )
    S = -(-m // W)
    active = min(ranks.size, S)
    bounds = [r * S // active for r in range(active + 1)]
    dp = None
    if me < active:
        dp = StripDP(
            q, s, tracer.mat, tracer.go, tracer.ge, resolved, chunk, tracer.backend,
            strips=(bounds[me], bounds[me + 1]),
        )  # fmt: skip
        dp.warm_origin()
        dp.first_pass()
    _exact_origins(ranks, dp)
    t_fill = time.perf_counter() - t0
    first_col = bounds[me] * W if dp is not None else 0
    mine, accepted, events = _merged_hits(ranks, tracer, dp, k, min_score, active, first_col)
    if events & accepted:
        del dp  # rank 0 runs the job alone: free this share first
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        one = None
        if me == 0:
            if whole is not None:
                tracer = Tracer(q, whole(), tracer.mat_np, tracer.go, tracer.ge,
                                tracer.host_bytes, tracer.backend)  # fmt: skip
            one = topk_one(tracer, k, min_score, plan, available)
        _say(ranks, "a hit crossed a border between ranks; rank 0 ran the job alone")
        return ranks.all_gather(one)[0]
    gathered = ranks.all_gather(
        ([(key, hit) for key, hit in mine if key in accepted], dp.refilled if dp else 0)
    )
    hits = sorted((pair for part, _ in gathered for pair in part), key=lambda p: p[0])
    if dp is not None:
        lo, hi = bounds[me], bounds[me + 1]
        _say(
            ranks,
            f"strips {lo}..{hi - 1} of {S} (subject columns {lo * W + 1}..{min(hi * W, m)}), "
            f"{len(mine)} hits found, {sum(key in accepted for key, _ in mine)} of them kept, "
            f"{dp.refilled} strips refilled; {t_fill:.2f} s to fill, "
            f"{time.perf_counter() - t0:.2f} s in all",
        )
    return pack_hits([hit for _, hit in hits], resolved, sum(r for _, r in gathered))


def _say(ranks, text: str) -> None:
    say = getattr(ranks, "say", None)
    if say is not None:
        say(f"torchmsa local: {getattr(ranks, 'tag', f'rank {ranks.rank}')}: {text}")


def _exact_origins(ranks, dp: StripDP | None) -> None:
    """Hand each rank's last column to the next rank until no rank's origin changes."""
    while True:
        last = dp.last().cpu().numpy() if dp is not None else None
        cols = ranks.all_gather(last)
        changed = False
        if dp is not None and ranks.rank > 0:
            changed = dp.set_origin(torch.from_numpy(cols[ranks.rank - 1]))
        if not any(ranks.all_gather(changed)):
            return


def _merged_hits(ranks, tracer, dp, k: int, min_score: int, active: int, first_col: int):
    """Every rank finds its share's successive hits, a batch per round, until the ``k`` best
    of all ranks are known. Returns this rank's ``[(key, hit)]``, the keys of the ``k`` best
    and the keys of the hits that broke the rule of independent shares. A key is ``(-score,
    i_end, j_end)``: the tie order, unique over the matrix.

    A round's batch is :func:`_batch_size` hits: while fewer than ``k`` hits are known, half
    of a fair share of those still missing, so that the ranks meet a few times rather than
    once per hit (each meeting waits for the slowest rank's hit). A rank ends its batch early
    once it is done (no hit left, an event, ``k`` hits of its own, or its last key past the
    ``k``-th smallest it knows of). Hits found beyond need are keys like any other: the answer
    is the ``k`` smallest of all, and every rank's hits up to its last are all its hits
    below that key, which is what makes the merge exact (module docstring)."""
    R, me = ranks.size, ranks.rank
    done = [r >= active for r in range(R)]
    found: list[list[tuple]] = [[] for _ in range(R)]
    mine: list[tuple] = []
    events: set[tuple] = set()
    after = 0  # rounds since k hits were known
    keys: list[tuple] = []  # every rank's keys so far, sorted
    while not all(done):
        size = _batch_size(k, len(keys), active, after)
        after += len(keys) >= k
        msgs = []
        while not done[me] and len(msgs) < size:
            key, event = _next_hit(tracer, dp, mine, k, min_score, first_col)
            msgs.append((key, event))
            if key is None or event or len(mine) == k:
                break
            if len(keys) + len(msgs) >= k and key > sorted(keys + [m for m, _ in msgs])[k - 1]:
                break
        for r, infos in enumerate(ranks.all_gather(msgs)):
            for key, event in infos:
                if key is None:
                    done[r] = True
                    continue
                found[r].append(key)
                if event:
                    events.add(key)
                done[r] = done[r] or event or len(found[r]) == k
        keys = sorted(key for part in found for key in part)
        if len(keys) >= k:  # a rank whose last hit is past the k-th has no more to give
            done = [d or bool(f and f[-1] > keys[k - 1]) for d, f in zip(done, found)]
    return mine, set(keys[:k]), events


def _batch_size(k: int, known: int, active: int, after: int) -> int:
    """Hits a rank looks for in a round: half a fair share of the ``k - known`` still
    missing over ``active`` ranks; once ``k`` are known, 1, 2, 4, ... (at most 16) in the
    rounds that follow.

    >>> [_batch_size(100, known, 2, 0) for known in (0, 50, 90, 99)]
    [25, 13, 3, 1]
    >>> [_batch_size(100, 100, 2, after) for after in range(7)]
    [1, 2, 4, 8, 16, 16, 16]
    """
    if known < k:
        return max(1, -(-(k - known) // (2 * active)))
    return min(16, 1 << min(after, 4))


def _next_hit(tracer, dp, mine: list, k: int, min_score: int, first_col: int):
    """This rank's next hit into ``mine``; returns ``(key, event)`` (``(None, False)``: no
    cell reaches ``min_score``)."""
    score, i_end, j_end, j_start = dp.top()
    if score < min_score:
        return None, False
    key = (-score, i_end, j_end)
    if j_start <= first_col:  # it starts in an earlier rank's share
        mine.append((key, None))
        return key, True
    hit = tracer.trace(dp, score, i_end, j_end, j_start)
    mine.append((key, hit))
    # the k-th hit of a rank is its last one: its pairs need no forbidding
    event = len(mine) < k and tracer.forbid(dp, hit)
    return key, event
