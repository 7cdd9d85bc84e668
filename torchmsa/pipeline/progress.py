"""The progress bar of ``align(progress=True)``."""

from __future__ import annotations

import sys

__all__ = ["ProgressBar"]


class ProgressBar:
    """A one-line progress bar on stderr (only when asked for and the job is not tiny).

    Arguments:
        total: the steps of the whole call (one per tree join of every pass).
        enabled: whether to draw at all.
    """

    def __init__(self, total: int, enabled: bool):
        self.total, self.enabled, self.base = total, enabled and total >= 2, 0
        self.stream = sys.stderr
        self.last = -1

    def step(self, done: int, total: int) -> None:
        """``done`` of a pass's ``total`` steps are done (a pass ends with ``done == total``)."""
        if not self.enabled:
            return
        frac = min(1.0, (self.base + done) / max(1, self.total))
        if done == total:
            self.base += total
        pct = int(frac * 100)
        if pct != self.last:
            self.last = pct
            bar = "#" * (pct // 4)
            self.stream.write(f"\rtorchmsa: aligning [{bar:<25}] {pct:3d}%")
            self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.stream.write("\n")
            self.stream.flush()
