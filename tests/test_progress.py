"""Progress from Python (nflow_compat.progress): ``progress=True`` draws a ``tqdm.auto`` bar
(the notebook's widget in Jupyter, text elsewhere), after a delay, for runs and plans; a
callback passes through as it is. (The command line's own bar: tests/system/test_progress.py.)"""
from __future__ import annotations

import pytest

import nflow_compat as nc
from nflow_compat import progress
from tests.util import blk, diagram, record, wire

LONG = diagram([blk("s", "sine"), record()], [wire("s", "w")], dt=1e-4, duration=2.0)    # 20,001 samples


class FakeBar:
    """What ``tqdm.auto.tqdm`` is asked to draw."""
    made = []

    def __init__(self, total, unit, desc, leave, dynamic_ncols):
        self.total, self.unit, self.n, self.closed, self.updates = total, unit, 0, False, []
        FakeBar.made.append(self)

    def update(self, k):
        self.n += k
        self.updates.append(self.n)

    def close(self):
        self.closed = True


@pytest.fixture
def fake_tqdm(monkeypatch):
    import tqdm.auto
    FakeBar.made = []
    monkeypatch.setattr(tqdm.auto, "tqdm", FakeBar)      # the class tqdm.auto picks (the widget in Jupyter)
    monkeypatch.setattr(progress, "DELAY", 0.0)
    return FakeBar


def test_a_run_with_progress_true_draws_a_tqdm_auto_bar_and_closes_it(fake_tqdm):
    nc.run(LONG, progress=True)
    (bar,) = fake_tqdm.made
    assert bar.unit == "samples" and bar.total == 20_001 and bar.n == 20_001 and bar.closed
    assert bar.updates == sorted(bar.updates) and len(bar.updates) > 1
    nc.compile_plan(LONG).run(progress=True)
    nc.simulate(LONG, progress=True)
    assert len(fake_tqdm.made) == 3 and all(b.closed and b.n == 20_001 for b in fake_tqdm.made)


def test_the_bar_waits_for_its_delay_and_is_closed_on_errors(monkeypatch, fake_tqdm):
    now = [0.0]
    bar = progress.Bar("runs", delay=1.0, clock=lambda: now[0])
    bar(1, 10)
    assert bar.bar is None                                 # a short job draws nothing
    now[0] = 1.5
    bar(3, 10)
    bar(7, 10)
    assert fake_tqdm.made[0].updates == [3, 7]
    bar.close()
    assert fake_tqdm.made[0].closed
    with pytest.raises(nc.DiagramError):
        with progress.callback(True, "samples") as call:
            call(1, 2)
            raise nc.DiagramError("x", "stop")
    assert fake_tqdm.made[-1].closed


def test_the_real_tqdm_writes_a_text_bar_outside_a_notebook(monkeypatch, capsys):
    monkeypatch.setattr(progress, "DELAY", 0.0)
    nc.run(LONG, progress=True)
    err = capsys.readouterr().err
    assert "nflow-compat" in err and "samples" in err


def test_a_callback_passes_through_and_anything_else_is_refused():
    seen = []
    nc.run(LONG, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (20_001, 20_001)
    with pytest.raises(nc.SimulationError) as info:
        nc.run(LONG, progress="yes")
    assert info.value.code == "bad_progress"


def test_without_tqdm_progress_true_is_a_typed_error(monkeypatch):
    import sys
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    with pytest.raises(nc.SimulationError) as info:
        nc.run(LONG, progress=True)
    assert info.value.code == "missing_dependency" and "pip install" in info.value.message
