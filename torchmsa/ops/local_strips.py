"""The strips of best-K local alignment (decision 0038): the ``strip_fill`` dispatcher, the
layout (strip width, segments, warm-up) chosen from the memory budget, and :class:`StripDP`,
which keeps every strip's checkpoint and best cell exact through the first pass, its fix-ups
and the recomputations after each hit.

A refill runs strips from a known column in chunks (a few strips, doubling) and stops after the
first strip, at or past a given one, whose new checkpoint equals the stored one: every later
value depends only on that column and on forbidden pairs that did not change.
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
CHUNK_MIN = 64  # strips a refill launch may hold at once


@dataclass(frozen=True, kw_only=True)
class LocalPlan:
    """How best-K local alignment lays out its work; it never changes the result.

    Attributes:
        strip_width: ``W``, columns per strip (``None``: the narrowest of ``256 * 2^k`` whose
            checkpoints fit the memory budget).
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
    extra = m + n if device.type == "cuda" else 0  # the codes' copies on the GPU
    widths = [plan.strip_width] if plan.strip_width else []
    if not widths:
        W = W_MIN
        while W < W_MAX and W < m:
            widths.append(W)
            W *= 2
        widths.append(W)
    for W in widths:
        need, resolved, chunk = _need(n, m, plan, W, workers, extra)
        if need <= available:
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
    """Checkpoints ``ckpt [S, 4, n + 1]`` and best cells ``best [S, 4]`` of the current matrix
    (every forbidden pair so far), kept exact; ``best_host`` mirrors ``best``.

    Arguments:
        q, s: ``uint8 [n]``, ``uint8 [m]`` codes on the work device.
        mat: ``int32 [A, A]`` on the work device; go, ge: gap costs.
        plan: a resolved :class:`LocalPlan`; chunk: strips a refill launch may hold.
        backend: ``"cpu"`` or ``"triton"``.
    """

    def __init__(self, q, s, mat, go: int, ge: int, plan: LocalPlan, chunk: int, backend: str):
        self.q, self.s, self.mat, self.go, self.ge = q, s, mat, int(go), int(ge)
        self.plan, self.chunk, self.backend = plan, chunk, backend
        self.n, self.m, self.W = q.shape[0], s.shape[0], plan.strip_width
        self.S = -(-self.m // self.W)
        dev = q.device
        self.ckpt = torch.empty((self.S, 4, self.n + 1), dtype=torch.int32, device=dev)
        self.best = torch.empty((self.S, 4), dtype=torch.int32, device=dev)
        self.best_host = np.zeros((self.S, 4), np.int32)
        self.zero = torch.zeros((4, self.n + 1), dtype=torch.int32, device=dev)
        self.zero[1] = NEG
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
        strip_fill(
            self.q, self.s, self.mat, self.go, self.ge, self.W,
            torch.as_tensor(np.asarray(lo, np.int32)).to(dev),
            torch.as_tensor(np.asarray(hi, np.int32)).to(dev),
            col_in.contiguous(),
            torch.as_tensor(np.asarray(slot, np.int64)).to(dev),
            *self._forbid_dev, ckpt, best,
            backend=self.backend,
        )  # fmt: skip

    def column(self, k: int) -> torch.Tensor:
        """The column before strip ``k`` (a copy)."""
        return self.zero.clone() if k == 0 else self.ckpt[k - 1].clone()

    def first_pass(self) -> int:
        """Fill every strip: segments in parallel after warm-ups, then fix-up rounds until
        each segment's input column equals its predecessor's last checkpoint. Returns the
        number of fix-up rounds."""
        S, ov = self.S, self.plan.warmup
        per = -(-S // self.plan.segments)
        a = np.arange(0, S, per, dtype=np.int64)  # [C] first strip of each segment
        b = np.minimum(a + per, S)
        C = a.shape[0]
        inp = self.zero.expand(C, -1, -1).clone()  # [C, 4, n + 1] column before segment c
        warm = np.minimum(ov, a)
        w = np.flatnonzero(warm)
        if w.size:
            wslot = np.concatenate([[0], np.cumsum(warm[w])[:-1]])
            wck = torch.empty(
                (int(warm.sum()), 4, self.n + 1), dtype=torch.int32, device=inp.device
            )
            wbest = torch.empty((wck.shape[0], 4), dtype=torch.int32, device=inp.device)
            w_t = torch.as_tensor(w, device=inp.device)
            self._fill(a[w] - warm[w], a[w], inp[w_t], wslot, wck, wbest)
            inp[w_t] = wck[torch.as_tensor(wslot + warm[w] - 1, device=inp.device)]
        self._fill(a, b, inp, a, self.ckpt, self.best)
        self.best_host[:] = self.best.cpu().numpy()
        rounds = 0
        while C > 1:
            prev = self.ckpt[torch.as_tensor(a[1:] - 1, device=inp.device)]  # [C - 1, 4, n + 1]
            ok = (inp[1:] == prev).flatten(1).all(1).cpu().numpy()
            bad = np.flatnonzero(~ok) + 1
            if not bad.size:
                break
            jobs = [_Job(int(a[c]), int(b[c]), int(a[c]), prev[c - 1], 0) for c in bad]
            self._refill(jobs)
            inp[torch.as_tensor(bad, device=inp.device)] = prev[
                torch.as_tensor(bad - 1, device=inp.device)
            ]
            rounds += 1
        return rounds

    def recompute(self, j_start: int, j_end: int) -> None:
        """Refill after forbidding pairs in DP columns ``j_start .. j_end``."""
        k0, k1 = (j_start - 1) // self.W, (j_end - 1) // self.W
        self._refill([_Job(k0, self.S, k1, self.column(k0), 0)])

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
            same = [
                (sck[o : o + c] == self.ckpt[k : k + c]).flatten(1).all(1)
                for o, k, c in zip(slot.tolist(), lo.tolist(), cnt.tolist())
            ]
            same = torch.cat(same).cpu().numpy()
            src, still = [], []
            for job, o, c in zip(active, slot.tolist(), cnt.tolist()):
                first = max(0, job.stop_from - job.k)
                hit = np.flatnonzero(same[o + first : o + c])
                keep = first + int(hit[0]) + 1 if hit.size else c
                src.append(np.arange(o, o + keep))
                if not hit.size and job.k + c < job.end:
                    job.col, job.k, job.size = sck[o + c - 1].clone(), job.k + c, 2 * job.size
                    still.append(job)
            dst = np.concatenate([lo[t] + np.arange(len(x)) for t, x in enumerate(src)])
            src = torch.as_tensor(np.concatenate(src), device=dev)
            dst_t = torch.as_tensor(dst, device=dev)
            self.ckpt.index_copy_(0, dst_t, sck.index_select(0, src))
            rows = sbest.index_select(0, src)
            self.best.index_copy_(0, dst_t, rows)
            self.best_host[dst] = rows.cpu().numpy()
            active = still

    def forbid(self, i: np.ndarray, j: np.ndarray) -> None:
        """Forbid the pairs ``(i[t], j[t])`` (DP rows and columns, none forbidden yet)."""
        keys = np.asarray(i, np.int64) * (self.m + 1) + np.asarray(j, np.int64)
        keys.sort()
        self.keys = np.insert(self.keys, np.searchsorted(self.keys, keys), keys)
        rows = self.keys // (self.m + 1)
        self.forbid_ptr = np.searchsorted(rows, np.arange(self.n + 2)).astype(np.int32)
        self.forbid_col = (self.keys % (self.m + 1)).astype(np.int32)
        dev = self.q.device
        self._forbid_dev = (
            torch.from_numpy(self.forbid_ptr).to(dev),
            torch.from_numpy(self.forbid_col).to(dev),
        )

    def top(self) -> tuple[int, int, int, int]:
        """The current best cell over all strips: ``(score, i, j, SH)``, first maximum in
        row-major order."""
        score = self.best_host[:, 0]
        cand = np.flatnonzero(score == score.max())
        rows = self.best_host[cand]
        r = cand[np.lexsort((rows[:, 2], rows[:, 1]))[0]]
        return tuple(int(x) for x in self.best_host[r])
