"""The strips of best-K local alignment (decision 0038): the ``strip_fill`` dispatcher, the
layout (strip width, segments, warm-up) chosen from the memory budget, and :class:`StripDP`,
which keeps every strip's checkpoint and best cell exact through the first pass, its fix-ups
and the recomputations after each hit.

A refill runs strips from a known column and stops after the first strip, at or past a given
one, whose new checkpoint equals the stored one: every later value depends only on that column
and on forbidden pairs that did not change. Fix-ups run in chunks (a few strips, doubling); a
recomputation after a hit runs strip by strip on the CPU, and on the GPU in ranges cut into
segments with warm-ups, like the first pass.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from torchmsa.constants import NEG
from torchmsa.cpu import strip as cpu_strip
from torchmsa.errors import ArgumentError, ResourceError
from torchmsa.ops.backend import resolve_backend

__all__ = ["LocalPlan", "plan_layout", "strip_fill", "StripDP"]

W_MIN = 256  # the automatic strip width's floor (columns)
W_MAX = 1 << 16  # the widest strip the automatic choice takes before giving up
WARMUP_COLUMNS = 1024  # warm-up of a segment after the first: random sequence forgets far sooner
CKPT_SHARE = 0.25  # of the budget the automatic strip width aims to stay within
CHUNK_MIN = 64  # strips a refill launch may hold at once
# segments of at most FUSED_CHUNKS refill chunks' strips, warm-ups included, are filled in one
# launch through a buffer (decision 0070); larger ones (the first pass) in two, in place
FUSED_CHUNKS = 1


@dataclass(frozen=True, kw_only=True)
class LocalPlan:
    """How best-K local alignment lays out its work; it never changes the result.

    Attributes:
        strip_width: ``W``, columns per strip (``None``: the narrowest of ``256 * 2^k`` whose
            checkpoints take at most a quarter of the memory budget, else all of it).
        segments: segments of the first pass, filled in parallel (``None``: 4 per CPU thread or
            GPU multiprocessor, each at least 4 warm-ups long).
        warmup: strips a segment after the first fills from a zero column before its own
            (``None``: enough for 1024 columns).
        refill: strips a refill's first chunk fills past the first one where it may stop (each
            further chunk doubles).
    """

    strip_width: int | None = None
    segments: int | None = None
    warmup: int | None = None
    refill: int = 2

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name != "refill":
                continue
            low = 0 if f.name == "warmup" else 1
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ArgumentError(
                    f"Invalid value for `LocalPlan.{f.name}`: {value!r}; expected an integer "
                    f">= {low}" + ("" if f.name == "refill" else " or None")
                )

    def __repr__(self) -> str:
        values = ((f.name, getattr(self, f.name), f.default) for f in fields(self))
        return f"LocalPlan({', '.join(f'{k}={v!r}' for k, v, d in values if v != d)})"


def strip_fill(
    q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, forbid_ptr, forbid_col, ckpt, best,
    *, backend: str = "auto",
) -> None:  # fmt: skip
    """Fill segments of strips on the tensors' device (``cpu/strip.py`` or
    ``triton_kernels/strip.py``, one signature; see either for the arguments)."""
    args = (q, s, mat, go, ge, W, seg_lo, seg_hi, col_in, slot, forbid_ptr, forbid_col, ckpt, best)
    if resolve_backend(backend, q.device) == "triton":
        from torchmsa._triton import strip as triton_strip

        triton_strip.strip_fill(*args)
    else:
        cpu_strip.strip_fill(*args)


def _workers(backend: str, device: torch.device) -> int:
    if backend == "triton" and device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return cpu_strip.workers()


def _need(n: int, m: int, plan: LocalPlan, W: int, workers: int, extra: int):
    """``(bytes, resolved plan, chunk)`` of strips ``W`` wide."""
    row = 16 * (n + 1)
    S = -(-m // W)
    ov = plan.warmup if plan.warmup is not None else -(-WARMUP_COLUMNS // W)
    C = plan.segments or max(1, min(4 * workers, S // (4 * max(ov, 1))))
    per = -(-S // min(C, S))
    C = -(-S // per)  # segments of ``per`` strips, the last one shorter
    chunk = max(CHUNK_MIN, C * plan.refill)
    need = S * (row + 16) + (C * (ov + 2) + chunk) * row + extra
    return need, LocalPlan(strip_width=W, segments=C, warmup=ov, refill=plan.refill), chunk


def plan_layout(n: int, m: int, plan: LocalPlan, backend: str, device, available: int):
    """The plan with every field resolved, and the strips a refill launch may hold.

    Arguments:
        n, m: query and subject lengths (both >= 1).
        plan: the requested plan.
        backend: ``"cpu"`` or ``"triton"`` (resolved).
        device: where the strips live.
        available: bytes the strips may take there.

    Returns:
        ``(plan, chunk)``.

    Raises:
        ResourceError: even strips of ``plan.strip_width`` (or 65,536) columns do not fit.
    """
    device = torch.device(device)
    workers = _workers(backend, device)
    # the codes' copies on the GPU and the kernel's between-pass buffer (16 bytes a column)
    extra = 17 * m + n if device.type == "cuda" else 0
    widths = [plan.strip_width] if plan.strip_width else []
    if not widths:
        W = W_MIN
        while W < W_MAX and W < m:
            widths.append(W)
            W *= 2
        widths.append(W)
    # the narrowest strips whose checkpoints take at most a quarter of the budget (narrower
    # ones would only make refills finer), else the narrowest that fit at all
    for share in (CKPT_SHARE, 1.0):
        for W in widths:
            need, resolved, chunk = _need(n, m, plan, W, workers, extra)
            if need <= available * share:
                return resolved, chunk
    S = -(-m // W)
    raise ResourceError(
        f"the strip checkpoints of best-K local alignment ({n}-residue query, {m}-residue "
        f"subject: {S} strips of {W} columns, {16 * (n + 1)} bytes each, on {device})",
        need,
        available,
        "raise the memory budget, split the subject, or use a shorter query",
    )


@dataclass
class _Job:
    k: int  # the next strip to fill
    end: int  # one past the last strip it may fill
    stop_from: int  # the first strip whose unchanged checkpoint may end it
    col: torch.Tensor  # [4, n + 1] the column before strip k
    size: int  # strips of its next chunk


class StripDP:
    """Checkpoints ``ckpt [hi - lo, 4, n + 1]`` and best cells ``best [hi - lo, 4]`` of strips
    ``lo .. hi - 1`` of the current matrix (every forbidden pair so far), kept exact;
    ``best_host`` mirrors ``best``. Strip indices are the subject's (``0 .. S - 1``); the store
    holds row ``k - lo`` for strip ``k``.

    Arguments:
        q, s: ``uint8 [n]``, ``uint8 [m]`` codes on the work device.
        mat: ``int32 [A, A]`` on the work device; go, ge: gap costs.
        plan: a resolved :class:`LocalPlan`; chunk: strips a refill launch may hold.
        backend: ``"cpu"`` or ``"triton"``.
        sequential: recompute strip by strip up to the stop (``cpu_strip.refill_until``; CPU
            only, all strips) rather than in chunks split into segments (``None``: on the CPU
            backend when the store holds every strip).
        strips: ``(lo, hi)``, the strips kept (``None``: all); a rank's share of the subject
            (``torchmsa/ops/local_hits.py``).
    """

    def __init__(
        self, q, s, mat, go: int, ge: int, plan: LocalPlan, chunk: int, backend: str,
        sequential: bool | None = None, strips: tuple[int, int] | None = None,
    ):  # fmt: skip
        self.q, self.s, self.mat, self.go, self.ge = q, s, mat, int(go), int(ge)
        self.plan, self.chunk, self.backend = plan, chunk, backend
        self.n, self.m, self.W = q.shape[0], s.shape[0], plan.strip_width
        self.S = -(-self.m // self.W)
        self.lo, self.hi = (0, self.S) if strips is None else (int(strips[0]), int(strips[1]))
        if not 0 <= self.lo < self.hi <= self.S:
            raise ArgumentError(f"Invalid strips {strips!r} of {self.S} strips")
        whole = (self.lo, self.hi) == (0, self.S)
        self.sequential = backend == "cpu" and whole if sequential is None else bool(sequential)
        if self.sequential and (q.device.type != "cpu" or not whole):
            raise ArgumentError(
                f"a sequential refill runs on the CPU over every strip; the codes are on "
                f"{q.device}, strips {self.lo}..{self.hi - 1} of {self.S}"
            )
        dev, size = q.device, self.hi - self.lo
        self.ckpt = torch.empty((size, 4, self.n + 1), dtype=torch.int32, device=dev)
        self.best = torch.empty((size, 4), dtype=torch.int32, device=dev)
        self.best_host = np.zeros((size, 4), np.int32)
        self.zero = torch.zeros((4, self.n + 1), dtype=torch.int32, device=dev)
        self.zero[1] = NEG
        self.origin = self.zero  # the column before strip ``lo``
        self.keys = np.zeros(0, np.int64)  # forbidden pairs as i * (m + 1) + j, sorted
        self.forbid_ptr = np.zeros(self.n + 2, np.int32)
        self.forbid_col = np.zeros(0, np.int32)
        self._forbid_dev = (
            torch.from_numpy(self.forbid_ptr).to(dev),
            torch.zeros(0, dtype=torch.int32, device=dev),
        )
        self.refilled = 0  # strips filled again after the first pass

    def _fill(self, lo, hi, col_in, slot, ckpt, best) -> None:
        dev = self.q.device
        idx = torch.from_numpy(np.stack([lo, hi, slot]).astype(np.int64)).to(dev)  # [3, C]
        strip_fill(
            self.q, self.s, self.mat, self.go, self.ge, self.W,
            idx[0].to(torch.int32), idx[1].to(torch.int32), col_in.contiguous(), idx[2],
            *self._forbid_dev, ckpt, best,
            backend=self.backend,
        )  # fmt: skip

    def column(self, k: int) -> torch.Tensor:
        """The column before strip ``k`` (a copy)."""
        return self.origin.clone() if k == self.lo else self.ckpt[k - 1 - self.lo].clone()

    def last(self) -> torch.Tensor:
        """The column after the last strip kept (a copy)."""
        return self.ckpt[-1].clone()

    def first_pass(self) -> int:
        """Fill every strip kept from :attr:`origin`: segments in parallel after warm-ups,
        then fix-up rounds until each segment's input column equals its predecessor's last
        checkpoint. Returns the number of fix-up rounds."""
        per = -(-(self.hi - self.lo) // self.plan.segments)
        a = np.arange(self.lo, self.hi, per, dtype=np.int64)  # [C] first strip of each segment
        return self._segments(a, np.minimum(a + per, self.hi), self.origin)

    def warm_origin(self) -> None:
        """Take as :attr:`origin` the column that ``warmup`` strips before ``lo`` leave when
        filled from a zero column (a guess; :meth:`set_origin` corrects it)."""
        w = min(self.plan.warmup, self.lo)
        if not w:
            return
        n1, dev = self.n + 1, self.q.device
        wck = torch.empty((w, 4, n1), dtype=torch.int32, device=dev)
        wbest = torch.empty((w, 4), dtype=torch.int32, device=dev)
        self._fill([self.lo - w], [self.lo], self.zero[None], [0], wck, wbest)
        self.origin = wck[w - 1].clone()

    def set_origin(self, col: torch.Tensor) -> bool:
        """Make ``col`` the column before strip ``lo`` and refill from it until a checkpoint
        comes out unchanged. Returns whether ``col`` differed from :attr:`origin`."""
        col = col.to(self.q.device)
        if bool((col == self.origin).all()):
            return False
        self.origin = col.clone()
        self._refill([_Job(self.lo, self.hi, self.lo, self.origin, 0)])
        return True

    def _segments(self, a: np.ndarray, b: np.ndarray, col0: torch.Tensor) -> int:
        """Fill strips ``a[0] .. b[-1] - 1`` exactly, cut into segments ``a[c] .. b[c] - 1``
        filled in parallel; ``col0`` is the exact column before strip ``a[0]``. Segment ``c > 0``
        starts from ``min(warmup, a[c] - a[0])`` warm-up strips, from the zero column (from
        ``col0`` when they reach back to ``a[0]``); fix-up rounds follow until each segment's
        input column equals its predecessor's last checkpoint. Returns the fix-up rounds."""
        dev, C = col0.device, a.shape[0]
        inp = col0.expand(C, -1, -1).clone()  # [C, 4, n + 1] column before segment c
        warm = np.minimum(self.plan.warmup, a - a[0])
        inp[torch.as_tensor(warm < a - a[0], device=dev)] = self.zero
        w = np.flatnonzero(warm)
        if int((b - a + warm).sum()) <= self.chunk * FUSED_CHUNKS:
            inp = self._fused(a, b, inp, warm, w)
        else:
            self._unfused(a, b, inp, warm, w)
        return self._fix_ups(a, b, inp)

    def _fused(self, a, b, inp, warm, w) -> torch.Tensor:
        """Segments ``a[c] .. b[c] - 1`` and their warm-ups in one launch, into a buffer whose
        own strips are then copied to the store (a refill's range: its critical path is one
        launch's); returns each segment's input column as filled."""
        dev, lo, n1 = inp.device, self.lo, self.n + 1
        rows = b - a + warm
        slot = np.concatenate([[0], np.cumsum(rows)[:-1]])
        sck = torch.empty((int(rows.sum()), 4, n1), dtype=torch.int32, device=dev)
        sbest = torch.empty((sck.shape[0], 4), dtype=torch.int32, device=dev)
        self._fill(a - warm, b, inp, slot, sck, sbest)
        own = np.concatenate([s + w + np.arange(n) for s, w, n in zip(slot, warm, b - a)])
        dst = np.concatenate([np.arange(x, y) for x, y in zip(a, b)]) - lo
        own_t, dst_t = (torch.as_tensor(x, device=dev) for x in (own, dst))
        self.ckpt.index_copy_(0, dst_t, sck.index_select(0, own_t))
        best = sbest.index_select(0, own_t)
        self.best.index_copy_(0, dst_t, best)
        self.best_host[dst] = best.cpu().numpy()
        if w.size:  # a warmed segment starts from its last warm-up strip's column
            inp = inp.clone()
            inp[torch.as_tensor(w, device=dev)] = sck[
                torch.as_tensor(slot[w] + warm[w] - 1, device=dev)
            ]
        return inp

    def _unfused(self, a, b, inp, warm, w) -> None:
        """The warm-ups in one launch, then the segments from their columns, straight into
        the store (the first pass: a buffer of every strip would double its memory)."""
        dev = inp.device
        if w.size:
            wslot = np.concatenate([[0], np.cumsum(warm[w])[:-1]])
            wck = torch.empty((int(warm.sum()), 4, self.n + 1), dtype=torch.int32, device=dev)
            wbest = torch.empty((wck.shape[0], 4), dtype=torch.int32, device=dev)
            w_t = torch.as_tensor(w, device=dev)
            self._fill(a[w] - warm[w], a[w], inp[w_t], wslot, wck, wbest)
            inp[w_t] = wck[torch.as_tensor(wslot + warm[w] - 1, device=dev)]
        lo = self.lo
        self._fill(a, b, inp, a - lo, self.ckpt, self.best)
        self.best_host[a[0] - lo : b[-1] - lo] = self.best[a[0] - lo : b[-1] - lo].cpu().numpy()

    def _fix_ups(self, a, b, inp) -> int:
        """Fix-up rounds until each segment's input column ``inp[c]`` equals the last
        checkpoint of the segment before it; returns their count."""
        dev, C, lo = inp.device, a.shape[0], self.lo
        rounds = 0
        while C > 1:
            prev = self.ckpt[torch.as_tensor(a[1:] - 1 - lo, device=dev)]  # [C - 1, 4, n + 1]
            ok = (inp[1:] == prev).flatten(1).all(1).cpu().numpy()
            bad = np.flatnonzero(~ok) + 1
            if not bad.size:
                break
            jobs = [_Job(int(a[c]), int(b[c]), int(a[c]), prev[c - 1], 0) for c in bad]
            self._refill(jobs)
            inp[torch.as_tensor(bad, device=dev)] = prev[torch.as_tensor(bad - 1, device=dev)]
            rounds += 1
        return rounds

    def recompute(self, j_start: int, j_end: int, score: int = 0) -> bool:
        """Refill after forbidding pairs in DP columns ``j_start .. j_end`` (a hit of ``score``);
        returns whether the column after the last strip kept changed (only possible when
        strips after ``hi`` exist: they would need a refill too).

        Columns before ``j_start`` are unchanged, so the refill starts at the strip holding it
        from the stored checkpoint before that strip, and stops after the first strip, at or
        past the one holding ``j_end``, whose new checkpoint equals the stored one (the strips
        after it see the same column and no new forbidden pair). Sequential (CPU): strip by
        strip, nothing filled past the stop. Otherwise in ranges filled straight into the store:
        the first reaches ``refill`` strips plus ``4 score / gap_extend`` columns past the hit
        (cells to its right change while they can still reach its score), each further one is
        twice as long; a range of more than ``warmup + 1`` strips is cut into up to
        ``segments`` segments filled in parallel after their warm-ups (:meth:`_segments`), so
        its critical path is about ``warmup + 1`` strips however long it is.
        """
        k0, k1 = (j_start - 1) // self.W, (j_end - 1) // self.W
        col = self.column(k0)
        if self.sequential:
            end = cpu_strip.refill_until(
                self.q, self.s, self.mat, self.go, self.ge, self.W, k0, k1, col,
                *self._forbid_dev, self.ckpt, self.best,
            )  # fmt: skip
            self.refilled += end - k0
            self.best_host[k0:end] = self.best[k0:end].numpy()
            return False
        reach = -(-4 * max(int(score), 0) // (max(self.ge, 1) * self.W))
        size = k1 - k0 + self.plan.refill + reach
        lo = self.lo
        while True:
            end = min(self.hi, k0 + size)
            old = self.ckpt[end - 1 - lo].clone()  # [4, n + 1]
            if end - k0 > self.plan.warmup + 1 and self.plan.segments > 1:
                step = -(-(end - k0) // self.plan.segments)  # warm-ups fit the plan's memory
                a = np.arange(k0, end, step, dtype=np.int64)
                self._segments(a, np.minimum(a + step, end), col)
            else:
                self._fill([k0], [end], col[None], [k0 - lo], self.ckpt, self.best)
                self.best_host[k0 - lo : end - lo] = self.best[k0 - lo : end - lo].cpu().numpy()
            self.refilled += end - k0
            # Strips past k1 see no new forbidden pair: once a new checkpoint there equals the
            # old one, every later one does, so the range's last one decides.
            same = bool((self.ckpt[end - 1 - lo] == old).all())
            if end == self.hi or same:
                return not same and self.hi < self.S
            col, k0, size = self.ckpt[end - 1 - lo].clone(), end, 2 * size

    def _refill(self, jobs: list[_Job]) -> None:
        """Run ``jobs`` together, chunk by chunk, copying what they fill into the store."""
        dev, n1 = self.q.device, self.n + 1
        for job in jobs:  # the first chunk reaches ``refill`` strips into the stopping range
            job.size = job.stop_from - job.k + self.plan.refill
        active = list(jobs)
        while active:
            cap = max(1, self.chunk // len(active))
            lo = np.array([j.k for j in active], np.int64)
            cnt = np.array([min(j.size, cap, j.end - j.k) for j in active], np.int64)
            slot = np.concatenate([[0], np.cumsum(cnt)[:-1]])
            total = int(cnt.sum())
            sck = torch.empty((total, 4, n1), dtype=torch.int32, device=dev)
            sbest = torch.empty((total, 4), dtype=torch.int32, device=dev)
            self._fill(lo, lo + cnt, torch.stack([j.col for j in active]), slot, sck, sbest)
            self.refilled += total
            at = np.concatenate([k + np.arange(c) for k, c in zip(lo, cnt)]) - self.lo
            at_t = torch.as_tensor(at, device=dev)
            same = (sck == self.ckpt.index_select(0, at_t)).flatten(1).all(1)
            host = torch.cat([same[:, None].to(torch.int32), sbest], 1).cpu().numpy()  # [T, 5]
            src, still = [], []
            for job, o, c in zip(active, slot.tolist(), cnt.tolist()):
                first = max(0, job.stop_from - job.k)
                hit = np.flatnonzero(host[o + first : o + c, 0])
                keep = first + int(hit[0]) + 1 if hit.size else c
                src.append(np.arange(o, o + keep))
                if not hit.size and job.k + c < job.end:
                    job.col, job.k, job.size = sck[o + c - 1].clone(), job.k + c, 2 * job.size
                    still.append(job)
            src = np.concatenate(src)
            dst_t = at_t[torch.as_tensor(src, device=dev)]
            src_t = torch.as_tensor(src, device=dev)
            self.ckpt.index_copy_(0, dst_t, sck.index_select(0, src_t))
            self.best.index_copy_(0, dst_t, sbest.index_select(0, src_t))
            self.best_host[at[src]] = host[src, 1:]
            active = still

    def forbid(self, i: np.ndarray, j: np.ndarray) -> None:
        """Forbid the pairs ``(i[t], j[t])`` (DP rows and columns, none forbidden yet)."""
        keys = np.asarray(i, np.int64) * (self.m + 1) + np.asarray(j, np.int64)
        keys.sort()
        self.keys = np.insert(self.keys, np.searchsorted(self.keys, keys), keys)
        rows = self.keys // (self.m + 1)
        self.forbid_ptr = np.searchsorted(rows, np.arange(self.n + 2)).astype(np.int32)
        self.forbid_col = (self.keys % (self.m + 1)).astype(np.int32)
        both = torch.from_numpy(np.concatenate([self.forbid_ptr, self.forbid_col]))
        both = both.to(self.q.device)  # one copy to the device
        self._forbid_dev = (both[: self.n + 2], both[self.n + 2 :])

    def top(self) -> tuple[int, int, int, int]:
        """The current best cell over all strips: ``(score, i, j, SH)``, first maximum in
        row-major order."""
        score = self.best_host[:, 0]
        cand = np.flatnonzero(score == score.max())
        rows = self.best_host[cand]
        r = cand[np.lexsort((rows[:, 2], rows[:, 1]))[0]]
        return tuple(int(x) for x in self.best_host[r])
