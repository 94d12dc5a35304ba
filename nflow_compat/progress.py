"""Progress while a run or a sweep goes, from Python: the caller's ``progress(done, total)``
as it is, or, for ``progress=True``, a bar drawn by ``tqdm.auto`` (a widget in Jupyter, a
text bar on a terminal), which appears only once the work has lasted ``DELAY`` seconds.
tqdm is the optional extra ``notebook`` and is imported only when a bar is asked for.
(The command line draws its own one-line bar on a terminal: ``cli.ProgressBar``.)
"""
from __future__ import annotations

import time
from contextlib import contextmanager

from .errors import SimulationError

DELAY = 1.0       # seconds of work before the bar appears


def _tqdm():
    try:
        from tqdm.auto import tqdm
    except ImportError:
        raise SimulationError("missing_dependency", "progress=True draws its bar with tqdm, which is not installed: "
                              "pip install 'nflow-compat[notebook]' (or: pip install tqdm)") from None
    return tqdm


class Bar:
    """``bar(done, total)``: a ``tqdm.auto`` bar counting ``unit``, made at the first call
    after ``delay`` seconds; ``close()`` removes it."""

    def __init__(self, unit: str, *, delay: float | None = None, clock=time.monotonic):
        self.tqdm = _tqdm()
        self.unit, self.delay, self.clock = unit, DELAY if delay is None else delay, clock
        self.started = clock()
        self.bar = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if self.clock() - self.started < self.delay:
                return
            self.bar = self.tqdm(total=total, unit=self.unit, desc="nflow-compat", leave=False, dynamic_ncols=True)
        if self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


@contextmanager
def callback(progress, unit: str):
    """The callback for ``progress`` (None / False: none; True: a ``Bar``; else the
    caller's own callable), closed when the work ends, however it ends."""
    if progress is None or progress is False:
        yield None
    elif progress is True:
        bar = Bar(unit)
        try:
            yield bar
        finally:
            bar.close()
    elif callable(progress):
        yield progress
    else:
        raise SimulationError("bad_progress", f"progress must be a callable progress(done, total), True (a bar) "
                              f"or None, not {type(progress).__name__}")
