"""``nflow-sim plot``: every workspace variable and scope against time, events marked
(docs/CONTRACT.md §1). Rendering needs matplotlib (extra ``plot``); the tests that draw skip without it,
the ones about what gets drawn and about the errors do not."""
from __future__ import annotations

import sys
from pathlib import Path

import matplotlib
import numpy as np
import orjson
import pytest

import nflow_compat as nc
from nflow_compat import plot
from nflow_compat.cli import main
from tests.util import blk, diagram, record, wire

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def clutches_result() -> dict:
    """A real run with stick-slip events: MSL CoupledClutches, shortened."""
    d = orjson.loads((FIXTURES / "msl/coupled_clutches.json").read_bytes())["diagram"]
    d["duration"] = 1.2
    return nc.simulate(d)


def mixed_diagram() -> dict:
    """Every recorder shape: Array on the grid, decimated Array (no times), Structure With
    Time, a vector Structure, scope, xyScope, display."""
    blocks = [blk("s", "sine", Frequency=0.5), blk("r", "ramp", slope=1), blk("v", "constant", Value=[1, 2, 3]),
              record("w_arr", "sine_arr"),
              blk("w_dec", "toWorkspace", VariableName="ramp_dec", SaveFormat="Array", Decimation=3),
              blk("w_swt", "toWorkspace", VariableName="sine_swt", SaveFormat="Structure With Time", Decimation=2),
              blk("w_vec", "toWorkspace", VariableName="vec", SaveFormat="Structure"),
              blk("sc", "scope", inputs=2), blk("xy", "xyScope", inputs=2), blk("disp", "display", Label="last")]
    conns = [wire("s", "w_arr"), wire("r", "w_dec"), wire("s", "w_swt"), wire("v", "w_vec"), wire("s", "sc", 0, 0),
             wire("r", "sc", 0, 1), wire("s", "xy", 0, 0), wire("r", "xy", 0, 1), wire("r", "disp")]
    return diagram(blocks, conns, dt=0.1, duration=2.0)


# ----------------------------------------------------------------------------- what is drawn

def by_title(panels) -> dict:
    return {p.title.split("  (")[0]: p for p in panels}


def test_every_recorded_signal_gets_a_panel():
    result = nc.simulate(mixed_diagram())
    got = by_title(plot.panels(result))
    # without the diagram a narrow variable gets a panel per column, named name[k]
    assert set(got) == {"sine_arr", "ramp_dec", "sine_swt", "vec: vec[1]", "vec: vec[2]", "vec: vec[3]",
                        "sc: sc[1]", "sc: sc[2]", "xy", "disp"}
    assert [label for label, _, _ in got["sc: sc[2]"].lines] == ["sc[2]"]
    assert [label for label, _, _ in got["xy"].lines] == ["xy.x", "xy.y"]
    grid = result["time"]
    assert list(got["sine_arr"].lines[0][1]) == grid                       # Array on the full grid
    assert list(got["sine_swt"].lines[0][1]) == result["workspace"]["sine_swt"]["time"] == grid[::2]
    dec = got["ramp_dec"]                                                  # decimated Array: no times
    assert not dec.on_time and dec.xlabel == "sample" and list(dec.lines[0][1]) == [1, 2, 3, 4, 5, 6, 7]
    assert got["disp"].markers == [("last", grid[-1], pytest.approx(2.0))]
    assert all(p.on_time for name, p in got.items() if name != "ramp_dec")


def test_channels_are_named_after_the_blocks_feeding_the_recorder():
    plan = nc.compile_plan(mixed_diagram())
    names = plot.channel_names(plan)
    assert names[("workspace", "vec")] == [plot.Signal("v", 3)]            # one vector signal: one panel
    assert names[("scopes", "sc")] == [plot.Signal("s", 1), plot.Signal("r", 1)]
    got = by_title(plot.panels(nc.simulate(mixed_diagram()), names))
    assert [label for label, _, _ in got["vec"].lines] == ["v[1]", "v[2]", "v[3]"]
    assert [label for label, _, _ in got["sc: r"].lines] == ["r"] and "sc: s" in got


def position_speed_force() -> dict:
    """A mass on a spring driven by a +-30 N force, its position (~ +-5 m), speed and the
    force muxed into one recorded variable: three scales on one variable."""
    blocks = [blk("force", "sine", Amplitude=30, Frequency=0.5), blk("F", "Force"), blk("m", "Mass"),
              blk("k", "Spring", k=20), blk("ground", "Fixed"), blk("position", "PositionSensor"),
              blk("speed", "SpeedSensor"), blk("mux", "mux", inputs=3),
              blk("w", "toWorkspace", VariableName="svf", SaveFormat="Array")]
    pin = [("F", "flange", "m", "flange"), ("m", "flange", "k", "a"), ("k", "b", "ground", "flange"),
           ("position", "flange", "m", "flange"), ("speed", "flange", "m", "flange")]
    conns = [wire("force", "F")] + [{"from": a, "fromPin": ap, "to": b, "toPin": bp} for a, ap, b, bp in pin]
    conns += [wire("position", "mux", 0, 0), wire("speed", "mux", 0, 1), wire("force", "mux", 0, 2), wire("mux", "w")]
    return diagram(blocks, conns, dt=0.02, duration=4.0, solver="ode45")


def test_a_muxed_variable_gets_one_panel_per_signal_each_on_its_own_axis():
    d = position_speed_force()
    names = plot.channel_names(nc.compile_plan(d))
    assert names[("workspace", "svf")] == [plot.Signal("position", 1), plot.Signal("speed", 1),
                                           plot.Signal("force", 1)]
    drawn = plot.panels(nc.simulate(d), names)
    assert [p.title for p in drawn] == ["svf: position  (Array)", "svf: speed  (Array)", "svf: force  (Array)"]
    spans = [float(np.ptp(p.lines[0][2])) for p in drawn]
    assert spans[2] == pytest.approx(60, rel=1e-3) and spans[0] < spans[2] / 5   # each on its own scale


def test_mux_of_vectors_nested_muxes_and_bus_member_names():
    blocks = [blk("v", "constant", Value=[1, 2]), blk("s", "sine"), blk("r", "ramp"),
              blk("inner", "mux", inputs=2), blk("outer", "mux", inputs=2),
              blk("bus", "busCreator", MemberNames=["speed", "angle"]),
              blk("w", "toWorkspace", VariableName="y", SaveFormat="Array"),
              blk("wb", "toWorkspace", VariableName="b", SaveFormat="Array")]
    conns = [wire("v", "inner", 0, 0), wire("s", "inner", 0, 1), wire("inner", "outer", 0, 0),
             wire("r", "outer", 0, 1), wire("outer", "w"), wire("s", "bus", 0, 0), wire("r", "bus", 0, 1),
             wire("bus", "wb")]
    names = plot.channel_names(nc.compile_plan(diagram(blocks, conns, duration=0.3)))
    assert names[("workspace", "y")] == [plot.Signal("v", 2), plot.Signal("s", 1), plot.Signal("r", 1)]
    assert names[("workspace", "b")] == [plot.Signal("speed", 1), plot.Signal("angle", 1)]


def test_events_are_block_and_target_mode():
    result = clutches_result()
    evs = plot.events(result)
    assert len(evs) == len(result["events"]) >= 5
    first = result["events"][0]
    assert evs[0] == (first["t"], first["block"], first["to"])
    kinds = plot._event_kinds(evs)
    assert sum(map(len, kinds.values())) == len(evs) and ("clutch2", first["to"]) in kinds
    looks = plot._event_looks(kinds)
    assert len(set(looks.values())) == len(kinds)              # every kind drawn differently


def test_many_event_kinds_are_merged_into_other():
    evs = [(0.01 * k, f"b{k % 40}", "stuck") for k in range(400)]
    kinds = plot._event_kinds(evs)
    assert len(kinds) == plot.MAX_EVENT_KINDS and ("other", "") in kinds
    assert sum(map(len, kinds.values())) == 400


def test_nulls_are_gaps_not_errors():
    result = {"status": "ok", "time": [0.0, 0.1, 0.2], "workspace": {"y": [[1.0], [None], [3.0]]}, "events": []}
    (panel,) = plot.panels(result)
    y = panel.lines[0][2]
    assert y[0] == 1.0 and y[1] != y[1] and y[2] == 3.0


@pytest.mark.parametrize("doc, code", [
    ({"status": "error", "error": {"code": "unknown_block_type", "message": "unknown block type 'gian'"}},
     "bad_result"),
    ({"blocks": []}, "bad_result"),
    ([1, 2], "bad_result"),
])
def test_not_a_result(doc, code):
    with pytest.raises(plot.PlotError) as info:
        plot.check_result(doc)
    assert info.value.code == code and info.value.message


# ----------------------------------------------------------------------------- CLI and errors

def test_cli_error_on_a_file_that_is_not_a_result(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('{"status": "error", "error": {"code": "x", "message": "boom"}}')
    assert main(["plot", str(bad), "-o", str(tmp_path / "x.png")]) == 1
    out = capsys.readouterr()
    doc = orjson.loads(out.out)
    assert doc["status"] == "error" and doc["error"]["code"] == "bad_result" and "boom" in doc["error"]["message"]
    bad.write_text("{nope")
    assert main(["plot", str(bad), "-o", str(tmp_path / "x.png")]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "bad_result"
    assert not (tmp_path / "x.png").exists()


def test_cli_without_matplotlib_says_how_to_install(tmp_path, capsys, monkeypatch):
    result = tmp_path / "r.json"
    result.write_bytes(orjson.dumps(nc.simulate(mixed_diagram())))
    monkeypatch.setitem(sys.modules, "matplotlib", None)          # makes `import matplotlib...` fail
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    assert main(["plot", str(result), "-o", str(tmp_path / "x.png")]) == 1
    out = capsys.readouterr()
    err = orjson.loads(out.out)["error"]
    assert err["code"] == "plot_unavailable" and "pip install" in err["message"]
    assert "plot_unavailable" in out.err and "Traceback" not in out.err
    assert not (tmp_path / "x.png").exists()


# ----------------------------------------------------------------------------- rendering

def _png_facts(path: Path):
    from PIL import Image
    with Image.open(path) as im:
        im = im.convert("RGB")
        colors = im.getcolors(maxcolors=1 << 20) or []
        return im.size, len(colors)


def test_cli_renders_a_real_result_to_png(tmp_path, capsys):
    result = clutches_result()
    src, out = tmp_path / "result.json", tmp_path / "clutches.png"
    src.write_bytes(orjson.dumps(result))
    assert main(["plot", str(src), "-o", str(out)]) == 0
    info = orjson.loads(capsys.readouterr().out)
    assert info == {"status": "ok", "output": str(out), "panels": len(result["workspace"]),
                    "series": len(result["workspace"]), "events": len(result["events"])}
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.stat().st_size > 30_000
    (width, height), colors = _png_facts(out)
    assert width >= 1000 and height >= 200 * info["panels"]
    assert colors > 50                      # lines, event markers, anti-aliasing: not a blank canvas


def test_every_recorder_shape_renders(tmp_path):
    out = tmp_path / "mixed.png"
    info = plot.render(nc.simulate(mixed_diagram()), out, title="mixed recorders")
    assert info == {"panels": 10, "series": 1 + 1 + 1 + 3 + 2 + 2 + 1, "events": 0}
    assert out.stat().st_size > 20_000


def test_a_diagram_is_run_then_drawn_and_svg_works(tmp_path, capsys):
    src, out = tmp_path / "diagram.json", tmp_path / "d.svg"
    src.write_bytes(orjson.dumps(mixed_diagram()))
    assert main(["plot", str(src), "-o", str(out)]) == 0
    assert orjson.loads(capsys.readouterr().out)["panels"] == 8          # named: vec is one signal of 3
    assert out.read_text().lstrip().startswith("<?xml")


def test_nothing_recorded_still_gives_an_image(tmp_path):
    out = tmp_path / "empty.png"
    result = nc.simulate(diagram([blk("c", "constant")], [], duration=0.2))
    assert plot.render(result, out) == {"panels": 0, "series": 0, "events": 0}
    assert out.stat().st_size > 1000


def test_unwritable_output_is_a_plot_error(tmp_path):
    with pytest.raises(plot.PlotError) as info:
        plot.render(nc.simulate(mixed_diagram()), tmp_path / "no" / "such" / "dir" / "x.png")
    assert info.value.code == "plot_output"


@pytest.mark.parametrize("dpi", ["100000", "0", "-5"])
def test_out_of_range_dpi_is_a_typed_error_before_running(tmp_path, capsys, monkeypatch, dpi):
    import nflow_compat.api as api

    def must_not_run(*args, **kwargs):
        raise AssertionError("simulated before checking the dpi")
    monkeypatch.setattr(api, "simulate", must_not_run)
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(mixed_diagram()))
    assert main(["plot", str(src), "-o", str(tmp_path / "x.png"), "--dpi", dpi]) == 1
    err = orjson.loads(capsys.readouterr().out)["error"]
    assert err["code"] == "bad_dpi" and "10 to 1200" in err["message"]
    assert not (tmp_path / "x.png").exists()


def test_plot_to_a_missing_directory_fails_before_running(tmp_path, capsys, monkeypatch):
    import nflow_compat.api as api

    def must_not_run(*args, **kwargs):
        raise AssertionError("simulated before checking the output")
    monkeypatch.setattr(api, "simulate", must_not_run)
    src = tmp_path / "d.json"
    src.write_bytes(orjson.dumps(mixed_diagram()))
    assert main(["plot", str(src), "-o", str(tmp_path / "no" / "x.png")]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "unwritable_output"


def test_an_image_too_tall_for_the_dpi_is_a_typed_error(tmp_path):
    # 30 panels of 2.6 in at 1200 dpi: ~95,000 pixels high, over the raster limit (65,536)
    result = {"status": "ok", "time": [0.0, 1.0], "events": [],
              "workspace": {f"v{k}": [[0.0], [1.0]] for k in range(30)}}
    with pytest.raises(plot.PlotError) as info:
        plot.render(result, tmp_path / "x.png", dpi=1200)
    assert info.value.code == "plot_too_large" and not (tmp_path / "x.png").exists()


def test_event_legend_instead_of_stacked_labels(tmp_path):
    result = clutches_result()
    out = tmp_path / "events.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):       # text stays text in the SVG
        plot.render(result, out)
    text = out.read_text()
    counts = {}
    for ev in result["events"]:
        counts[(ev["block"], ev["to"])] = counts.get((ev["block"], ev["to"]), 0) + 1
    for (block, to), n in counts.items():
        assert text.count(f"{block} -&gt; {to}: {n}") == 1        # one legend entry per kind
    assert "-&gt;" + result["events"][0]["to"] not in text       # no per-event "block:from->to" labels


def test_cli_names_a_result_file_from_its_diagram(tmp_path, capsys):
    d = position_speed_force()
    src, res = tmp_path / "d.json", tmp_path / "r.json"
    src.write_bytes(orjson.dumps(d))
    res.write_bytes(orjson.dumps(nc.simulate(d)))
    assert main(["plot", str(res), "-o", str(tmp_path / "plain.svg")]) == 0
    assert orjson.loads(capsys.readouterr().out)["panels"] == 3           # svf[1..3], a panel each
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        assert main(["plot", str(res), "--diagram", str(src), "-o", str(tmp_path / "named.svg")]) == 0
    capsys.readouterr()
    text = (tmp_path / "named.svg").read_text()
    assert "svf: position" in text and "svf: force" in text and "svf[1]" not in text
