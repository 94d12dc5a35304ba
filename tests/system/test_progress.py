"""Long runs (issue 5 §5): a progress bar on stderr only when it is a terminal and the run
lasts over about a second, never on stdout; --quiet; Ctrl-C ends with exit code 130."""
import io
import os
import pty
import select
import signal
import subprocess
import sys
import threading

import orjson
import pytest

import nflow_compat as nc
from nflow_compat import cli
from tests.util import blk, diagram, read_until, record, wire


def chain(n_gains: int, dt: float, duration: float, recorder=False, loop=False):
    """sine -> n gains -> a recorder or a terminator. ``loop``: the sine enters through a
    sum that adds the chain's output of the step before (a unitDelay), which keeps every
    block in the step loop; a chain fed by time alone is computed over the whole grid at
    once, far too fast for a run that must last."""
    blocks = [blk("s", "sine")] + [blk(f"g{i}", "gain", Gain=1) for i in range(n_gains)]
    conns = [wire("s", "g0")] + [wire(f"g{i}", f"g{i + 1}") for i in range(n_gains - 1)]
    if loop:
        blocks += [blk("add", "sum", Inputs="++", inputs=2), blk("z", "unitDelay")]
        conns = [wire("s", "add"), wire("z", "add", 0, 1), wire("add", "g0"), wire(f"g{n_gains - 1}", "z")] + conns[1:]
    if recorder:
        blocks.append(record())
    else:
        blocks.append(blk("w", "terminator"))
    conns.append(wire(f"g{n_gains - 1}", "w"))
    return diagram(blocks, conns, dt=dt, duration=duration)


SHORT = chain(2, 0.1, 1.0, recorder=True)
MEDIUM = chain(5, 1e-4, 5.0, recorder=True)          # 50,001 samples, a fraction of a second
LONG = chain(240, 1e-5, 10.0, loop=True)    # 1,000,001 samples x 244 blocks: 2-4 s here, the bar shows after 1 s


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


# ----------------------------------------------------------------------------- the bar itself

def test_bar_waits_for_the_delay_then_draws_and_erases():
    out, clock = io.StringIO(), FakeClock()
    bar = cli.ProgressBar(out, delay=1.0, interval=0.2, clock=clock)
    clock.now += 0.5
    bar(10, 100)
    assert out.getvalue() == ""                       # a short run shows nothing
    clock.now += 0.6
    bar(40, 100)
    text = out.getvalue()
    assert text.startswith("\r") and "40.0%" in text and "40/100 samples" in text and "\n" not in text
    assert "~2 s left" in text                        # 1.1 s for 40 %: 1.65 s to go
    clock.now += 0.1
    bar(45, 100)
    assert out.getvalue() == text                     # throttled: at most every interval
    clock.now += 0.2
    bar(100, 100)
    assert "100.0%" in out.getvalue()
    bar.close()
    assert out.getvalue().endswith("\r") and out.getvalue().split("\r")[-2].strip() == ""
    before = out.getvalue()
    bar.close()
    assert out.getvalue() == before                   # closing twice writes nothing more


def test_close_without_drawing_writes_nothing():
    out = io.StringIO()
    bar = cli.ProgressBar(out, delay=1.0, clock=FakeClock())
    bar(1, 2)
    bar.close()
    assert out.getvalue() == ""


# ----------------------------------------------------------------------------- the engine calls it

def _calls(d, **kw):
    seen = []
    result = nc.simulate(d, progress=lambda done, total: seen.append((done, total)), **kw)
    return result, seen


def test_fixed_step_loop_reports_in_chunks_up_to_the_end():
    result, seen = _calls(MEDIUM)
    n = len(result["time"])
    assert n == 50_001 and seen and seen[-1] == (n, n)
    dones = [d for d, _ in seen]
    assert dones == sorted(dones) and all(total == n for _, total in seen)
    assert len(seen) < n / 100                         # cheap: nowhere near a call per step
    assert result["workspace"] == nc.simulate(MEDIUM)["workspace"]


def test_a_stopped_run_reports_no_more_than_it_ran():
    d = diagram([blk("s", "step", Time=0.45), blk("stop", "stopSimulation"), record()],
                [wire("s", "stop"), wire("s", "w")], dt=0.1, duration=1.0)
    result, seen = _calls(d)
    assert len(result["time"]) == 6 and seen[-1] == (6, 11)


def test_solver_run_reports_every_grid_point():
    d = diagram([blk("m", "Mass", v0=1), blk("s", "PositionSensor"), record()],
                [{"from": "m", "fromPin": "flange", "to": "s", "toPin": "flange"}, wire("s", "w")],
                dt=0.1, duration=1.0, solver="ode45")
    result, seen = _calls(d)
    assert [d for d, _ in seen] == list(range(1, 12)) and result["workspace"]["y"][-1] == [pytest.approx(1.0)]


# ----------------------------------------------------------------------------- the CLI, a fake terminal

class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def _cli(args, tmp_path, d, monkeypatch, capsys, *, tty=True, delay=None):
    f = tmp_path / "d.json"
    f.write_bytes(orjson.dumps(d))
    err = FakeTTY() if tty else io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    if delay is not None:
        monkeypatch.setattr(cli, "PROGRESS_DELAY", delay)
    code = cli.main(["run", str(f), *args])
    return code, capsys.readouterr().out, err.getvalue()


def test_long_run_on_a_terminal_shows_the_bar(tmp_path, monkeypatch, capsys):
    # "long" here: the delay is shortened to 0 so that a fraction of a second counts
    code, out, err = _cli([], tmp_path, MEDIUM, monkeypatch, capsys, delay=0.0)
    assert code == 0 and "nflow-sim [" in err and "%" in err and "samples" in err
    assert err.endswith("\r") and "\n" not in err     # erased at the end, no stray lines
    result = orjson.loads(out)                        # stdout is the JSON and nothing else
    assert result["status"] == "ok" and len(result["time"]) == 50_001
    assert "nflow-sim" not in out


def test_short_run_shows_no_bar(tmp_path, monkeypatch, capsys):
    code, out, err = _cli([], tmp_path, SHORT, monkeypatch, capsys)   # the real 1 s delay
    assert code == 0 and err == "" and orjson.loads(out)["status"] == "ok"


def test_quiet_shows_nothing(tmp_path, monkeypatch, capsys):
    code, out, err = _cli(["--quiet"], tmp_path, MEDIUM, monkeypatch, capsys, delay=0.0)
    assert code == 0 and err == ""
    code2, out2, _ = _cli(["-q"], tmp_path, MEDIUM, monkeypatch, capsys, delay=0.0)
    assert _drop_wall(out) == _drop_wall(out2)


def test_quiet_before_the_command_too(tmp_path, monkeypatch, capsys):
    f = tmp_path / "d.json"
    f.write_bytes(orjson.dumps(MEDIUM))
    err = FakeTTY()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(cli, "PROGRESS_DELAY", 0.0)
    assert cli.main(["--quiet", "run", str(f)]) == 0 and err.getvalue() == ""


def test_not_a_terminal_shows_nothing(tmp_path, monkeypatch, capsys):
    code, out, err = _cli([], tmp_path, MEDIUM, monkeypatch, capsys, tty=False, delay=0.0)
    assert code == 0 and err == ""


def test_stdout_is_the_same_with_and_without_the_bar(tmp_path, monkeypatch, capsys):
    _, with_bar, err = _cli([], tmp_path, MEDIUM, monkeypatch, capsys, delay=0.0)
    _, without, _ = _cli(["--quiet"], tmp_path, MEDIUM, monkeypatch, capsys, delay=0.0)
    assert err and _drop_wall(with_bar) == _drop_wall(without)


def test_pipe_shows_the_bar_too(tmp_path, monkeypatch, capsys):
    err = FakeTTY()
    monkeypatch.setattr(sys, "stderr", err)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(orjson.dumps(MEDIUM))))
    monkeypatch.setattr(cli, "PROGRESS_DELAY", 0.0)
    assert cli.main([]) == 0 and "nflow-sim [" in err.getvalue()
    assert orjson.loads(capsys.readouterr().out)["status"] == "ok"


def _drop_wall(text: str) -> dict:
    doc = orjson.loads(text)
    doc["stats"].pop("wall_s")
    return doc


# ----------------------------------------------------------------------------- a real terminal

def _spawn_on_pty(args, stdin=None):
    """nflow-sim with stderr on a pseudo-terminal; returns (process, master fd)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "nflow_compat", *args], stdin=stdin,
                            stdout=subprocess.PIPE, stderr=slave, close_fds=True)
    os.close(slave)
    return proc, master


def _drain(master) -> bytes:
    seen = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.2)
        if not ready:
            return seen
        try:
            chunk = os.read(master, 4096)
        except OSError:
            return seen
        if not chunk:
            return seen
        seen += chunk


def test_real_terminal_long_run(tmp_path):
    f = tmp_path / "long.json"
    f.write_bytes(orjson.dumps(LONG))
    proc, master = _spawn_on_pty(["run", str(f)])
    # read the terminal while the run goes on: once the child has exited Linux may refuse
    # (EIO) what it wrote there, and a full terminal buffer would block the child
    chunks = []
    reader = threading.Thread(target=lambda: chunks.append(read_until(master, b"\0never", timeout=300)))
    reader.start()
    try:
        stdout, _ = proc.communicate(timeout=300)
        reader.join(timeout=10)
    finally:
        os.close(master)
    err = b"".join(chunks)
    assert proc.returncode == 0
    assert b"nflow-sim [" in err and b"%" in err and b"Traceback" not in err
    result = orjson.loads(stdout)
    assert result["status"] == "ok" and len(result["time"]) == 1_000_001
    assert result["stats"]["wall_s"] > 1.0             # it was a long run indeed


def _interrupt(args, stdin=None):
    """Start nflow-sim on a pseudo-terminal, press Ctrl-C once its progress bar shows;
    returns (exit code, stdout, what the terminal showed)."""
    proc, master = _spawn_on_pty(args, stdin=stdin)
    try:
        seen = read_until(master, b"nflow-sim [", timeout=120)   # the run is under way
        assert b"nflow-sim [" in seen
        proc.send_signal(signal.SIGINT)
        stdout, _ = proc.communicate(timeout=60)
        seen += _drain(master)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return proc.returncode, stdout, seen


def test_ctrl_c_ends_with_130_and_a_clean_message(tmp_path):
    f = tmp_path / "long.json"
    f.write_bytes(orjson.dumps(chain(40, 1e-5, 60.0, loop=True)))  # a minute or more: it will be interrupted
    code, stdout, seen = _interrupt(["run", str(f)])
    assert code == 130
    assert stdout == b""                                # no JSON dressed as a result
    assert b"nflow-sim: interrupted" in seen and b"Traceback" not in seen


def test_ctrl_c_in_the_pipe(tmp_path):
    f = tmp_path / "long.json"
    f.write_bytes(orjson.dumps(chain(40, 1e-5, 60.0, loop=True)))
    with open(f, "rb") as fh:
        code, stdout, seen = _interrupt([], stdin=fh)
    assert code == 130 and stdout == b""
    assert seen.rstrip().endswith(b"nflow-sim: interrupted") and b"Traceback" not in seen
