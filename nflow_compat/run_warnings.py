"""Python warnings raised while a diagram runs (scipy's, numpy's) go into that run's
result ``warnings``, never to stderr.

``warnings.catch_warnings`` swaps process-wide state on entry and restores it on exit, so
two runs overlapping in threads would take each other's warnings and leave the wrong state
behind. Here the first run to start installs one hook (and an "always" filter for the
libraries a run calls, so a warning is recorded by every run, not only the first one in
the process) and the last run to end restores what was there; the hook hands each warning
to the run of the thread that raised it, and any other thread's warning to the handler
that was installed before.
"""
from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager

# modules a warning raised during a run is attributed to (the frame that called warn)
_RUN_MODULES = r"(nflow_compat|scipy|numpy)(\.|$)"

_lock = threading.Lock()
_local = threading.local()
_active = 0
_saved: warnings.catch_warnings | None = None
_previous_show = None


def _show(message, category, filename, lineno, file=None, line=None):
    seen = getattr(_local, "seen", None)
    if seen is None:
        _previous_show(message, category, filename, lineno, file, line)
        return
    text = f"{category.__name__}: {message}"
    seen[text] = seen.get(text, 0) + 1


@contextmanager
def captured(sink: list):
    """Within the block, warnings this thread raises are counted; on leaving, each
    distinct one is appended to ``sink`` once (with how often it came when more than once)."""
    global _active, _saved, _previous_show
    with _lock:
        if _active == 0:
            _saved = warnings.catch_warnings()
            _saved.__enter__()
            _previous_show = warnings.showwarning
            warnings.showwarning = _show
            warnings.filterwarnings("always", module=_RUN_MODULES)
        _active += 1
    outer = getattr(_local, "seen", None)   # a run inside a run (a nested plan): its own count
    _local.seen = seen = {}
    try:
        yield
    finally:
        _local.seen = outer
        with _lock:
            _active -= 1
            if _active == 0:
                _saved.__exit__(None, None, None)
                _saved = None
        sink.extend(text if count == 1 else f"{text} ({count} times)" for text, count in seen.items())


def sink():
    """This thread's count of the run it is in (None outside ``captured``): a driver that
    runs another thread's run's code (``engine.batch``) counts that run's warnings into it
    with ``count_into``."""
    return getattr(_local, "seen", None)


def count_into(seen):
    """From now on this thread's warnings go to ``seen`` (another run's ``sink()``, or None:
    no run's); returns where they went before, to be given back the same way."""
    outer = getattr(_local, "seen", None)
    _local.seen = seen
    return outer
