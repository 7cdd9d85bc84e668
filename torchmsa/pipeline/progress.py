"""The progress bar of ``align(progress=True)`` and ``add(progress=True)``: a tqdm bar on
stderr that appears only once the work has run for :data:`DELAY` seconds (a plain one-line
bar where tqdm is not installed)."""

from __future__ import annotations

import sys
import time

from torchmsa import stages

__all__ = ["DELAY", "ProgressBar", "StageTimes"]

DELAY = 1.0  # seconds of work before a bar appears: short calls print nothing


class ProgressBar:
    """A progress bar on stderr, drawn only when asked for, the work has at least two steps
    and it has run for ``delay`` seconds.

    Arguments:
        total: the steps of the whole call (``align``: one per tree join of every pass).
        enabled: whether to draw at all.
        what: the bar's label.
        delay: seconds before the bar appears.
        stream: where to draw (default ``sys.stderr``).
    """

    def __init__(
        self, total: int, enabled: bool, what: str = "aligning", delay: float = DELAY, stream=None
    ):
        self.total, self.enabled, self.base = total, enabled and total >= 2, 0
        self.what, self.delay = what, delay
        self.stream = sys.stderr if stream is None else stream
        self.start = time.perf_counter()
        self.done = 0
        self._bar = None
        self._plain = False
        self.last = -1

    def step(self, done: int, total: int) -> None:
        """``done`` of a pass's ``total`` steps are done (a pass ends with ``done == total``)."""
        if not self.enabled:
            return
        now = self.base + done
        if done == total:
            self.base += total
        self._draw(min(now, self.total))

    def update(self, done: int, total: int) -> None:
        """``done`` of the call's steps are done (one counter for the whole call)."""
        if self.enabled:
            self._draw(min(done, self.total))

    def _draw(self, now: int) -> None:
        if self._bar is None and not self._plain:
            if time.perf_counter() - self.start < self.delay:
                self.done = now
                return
            self._open()
        if self._bar is not None:
            self._bar.update(now - self.done)
        else:
            pct = int(100 * now / max(1, self.total))
            if pct != self.last:
                self.last = pct
                bar = "#" * (pct // 4)
                self.stream.write(f"\rtorchmsa: {self.what} [{bar:<25}] {pct:3d}%")
                self.stream.flush()
        self.done = now

    def _open(self) -> None:
        try:
            from tqdm import tqdm
        except ImportError:
            self._plain = True
            return
        self._bar = tqdm(
            total=self.total,
            initial=self.done,
            desc=f"torchmsa: {self.what}",
            file=self.stream,
            unit="step",
            leave=False,
            dynamic_ncols=True,
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
        elif self._plain and self.last >= 0:
            self.stream.write("\n")
            self.stream.flush()


class StageTimes:
    """Seconds per pipeline stage (:func:`torchmsa.stages.stage`) while the block runs
    (``-v``)::

        with StageTimes() as times:
            torchmsa.align(...)
        times.seconds  # {"align": 1.2, "encode": 0.01, ...}, in order of first start

    A stage that runs many times (a progressive level) is summed; a stage inside another is
    also counted in the outer one's time.
    """

    def __init__(self):
        self.seconds: dict[str, float] = {}
        self._stages: dict[str, list[float]] = {}

    def _add(self, name: str, start: float, took: float) -> None:
        at = self._stages.setdefault(name, [start, 0.0])
        at[1] += took

    def __enter__(self) -> StageTimes:
        stages.listen(self._add)
        return self

    def __exit__(self, *exc) -> None:
        stages.unlisten(self._add)
        ordered = sorted(self._stages.items(), key=lambda kv: kv[1][0])
        self.seconds = {k: v[1] for k, v in ordered}

    def report(self) -> str:
        """One ``torchmsa: stage <name> <seconds> s`` line per stage."""
        width = max((len(k) for k in self.seconds), default=0)
        return "".join(
            f"torchmsa: stage {k:<{width}} {v:9.3f} s\n" for k, v in self.seconds.items()
        )
