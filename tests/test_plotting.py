"""``nflow_compat.plot`` and ``nflow-sim plot`` (nflow_compat.plotting): every workspace variable and
scope against time, units on the axes, events on the panels of their blocks (docs/CONTRACT.md §1)."""
from __future__ import annotations

import copy
import sys
from pathlib import Path

import matplotlib
import numpy as np
import orjson
import pytest

import nflow_compat as nc
from nflow_compat import plotting as plot
from nflow_compat.cli import main
from tests.util import blk, diagram, pin, record, wire

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


def _without_columns(result: dict) -> dict:
    """A result as files written before the result named its columns."""
    return {k: v for k, v in result.items() if k != "columns"}


def test_every_recorded_signal_gets_a_panel():
    result = nc.simulate(mixed_diagram())
    got = by_title(plot.panels(result))
    # the result names its columns: one vector signal is one panel, a scope's two signals two
    assert set(got) == {"sine_arr", "ramp_dec", "sine_swt", "vec", "sc: s", "sc: r", "xy", "disp"}
    assert [label for label, *_ in got["vec"].lines] == ["v[1]", "v[2]", "v[3]"]
    assert [label for label, *_ in got["sc: r"].lines] == ["r"]
    assert [label for label, *_ in got["xy"].lines] == ["xy.x", "xy.y"]
    grid = result["time"]
    assert list(got["sine_arr"].lines[0][1]) == grid                       # Array on the full grid
    assert list(got["sine_swt"].lines[0][1]) == result["workspace"]["sine_swt"]["time"] == grid[::2]
    dec = got["ramp_dec"]                                                  # decimated Array: no times
    assert not dec.on_time and dec.xlabel == "sample" and list(dec.lines[0][1]) == [1, 2, 3, 4, 5, 6, 7]
    assert got["disp"].markers == [("last", grid[-1], pytest.approx(2.0))]
    assert all(p.on_time for name, p in got.items() if name != "ramp_dec")
    # the titles say what is drawn, not the SaveFormat
    assert not any("(Array)" in p.title or "Structure" in p.title for p in plot.panels(result))


def test_a_result_without_column_names_gets_a_panel_per_narrow_column():
    got = by_title(plot.panels(_without_columns(nc.simulate(mixed_diagram()))))
    assert {"vec: vec[1]", "vec: vec[2]", "vec: vec[3]", "sc: sc[1]", "sc: sc[2]"} <= set(got)
    assert [label for label, *_ in got["sc: sc[2]"].lines] == ["sc[2]"]


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
    drawn = plot.panels(nc.simulate(position_speed_force()))
    assert [p.title for p in drawn] == ["svf: position", "svf: speed", "svf: force"]
    assert [p.ylabel for p in drawn] == ["[m]", "[m/s]", ""]                # the sensors' units
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
    got = by_title(plot.panels(nc.simulate(diagram(blocks, conns, duration=0.3))))
    assert set(got) == {"y: v", "y: s", "y: r", "b: speed", "b: angle"}
    assert [label for label, *_ in got["y: v"].lines] == ["v[1]", "v[2]"]


def demuxed() -> dict:
    """A 3-output demux (more outputs than its manifest names) feeding a recorder through a mux."""
    return diagram([blk("c", "constant", Value=[1, 2, 3]), blk("dm", "demux", inputs=1, outputs=3),
                    blk("m", "mux", inputs=3), record()],
                   [wire("c", "dm"), wire("dm", "m", 0, 0), wire("dm", "m", 1, 1), wire("dm", "m", 2, 2),
                    wire("m", "w")], duration=0.3)


def test_a_demux_fed_recorder_is_drawn(tmp_path, capsys):
    fig = nc.plot(nc.run(demuxed()))
    assert [a.get_title(loc="left") for a in fig.axes] == ["y: dm.0", "y: dm.1", "y: dm.2"]
    assert [a.lines[0].get_ydata()[0] for a in fig.axes] == [1.0, 2.0, 3.0]
    # through the CLI: a diagram run first, and a result named by --diagram (was internal_error: IndexError)
    src, res = tmp_path / "d.json", tmp_path / "r.json"
    src.write_bytes(orjson.dumps(demuxed()))
    res.write_bytes(orjson.dumps(_without_columns(nc.simulate(demuxed()))))
    assert main(["plot", str(src), "-o", str(tmp_path / "a.png")]) == 0
    assert orjson.loads(capsys.readouterr().out)["panels"] == 3
    assert main(["plot", str(res), "--diagram", str(src), "-o", str(tmp_path / "b.png")]) == 0
    assert orjson.loads(capsys.readouterr().out)["panels"] == 3


def test_plot_returns_a_figure_sharing_time_with_units_on_the_axes():
    from matplotlib.figure import Figure
    fig = nc.plot(nc.run(position_speed_force()))
    assert isinstance(fig, Figure)
    position, speed, force = fig.axes
    assert position.get_shared_x_axes().joined(position, force) and speed.get_ylabel() == "[m/s]"
    assert force.get_xlabel() == "time (s)" and position.get_xlabel() == ""
    picked = nc.plot(nc.simulate(mixed_diagram()), ["sine_arr", "sc"])
    assert [a.get_title(loc="left") for a in picked.axes] == ["sine_arr", "sc: s", "sc: r"]
    one = nc.plot(nc.run(position_speed_force()), overlay=True)
    assert len(one.axes) == 1 and [ln.get_label() for ln in one.axes[0].lines] == ["position", "speed", "force"]
    with pytest.raises(plot.PlotError) as info:
        nc.plot(nc.run(position_speed_force()), ["sfv"])
    assert info.value.code == "unknown_variable" and "did you mean 'svf'?" in info.value.message


def test_plot_draws_into_given_axes_and_a_reference_dashed():
    from matplotlib.figure import Figure
    ax = Figure().subplots()
    d = position_speed_force()
    slower = copy.deepcopy(d)
    slower["blocks"][0]["params"]["Frequency"] = 0.25
    fig = nc.plot(nc.run(d), "svf", ax=ax, reference=nc.run(slower))
    assert fig is ax.figure and len(fig.axes) == 1
    labels = [ln.get_label() for ln in ax.lines]
    assert labels == ["position", "speed", "force", "position (reference)", "speed (reference)", "force (reference)"]
    assert ax.lines[3].get_linestyle() == "--"


def stick_slip() -> dict:
    blocks = [blk("f", "sine", Amplitude=25, Frequency=0.25), blk("force", "Force"),
              blk("stop1", "MassWithStopAndFriction", F_Coulomb=5, F_Stribeck=10, smax=25, smin=-25, L=1),
              blk("v", "SpeedSensor"), record("wv", "v"), blk("sc", "scope", inputs=1), record("wf", "drive")]
    conns = [wire("f", "force"), pin("force", "flange", "stop1", "flange_a"), pin("v", "flange", "stop1", "flange_a"),
             wire("v", "wv"), wire("f", "sc"), wire("f", "wf")]
    return diagram(blocks, conns, dt=0.01, duration=5.0, solver="ode45")


def test_events_are_drawn_on_their_blocks_panels_and_modes_shaded():
    result = nc.run(stick_slip())
    assert [(e["from"], e["to"]) for e in result.event_list] == [("stuck", "forward"), ("forward", "backward"),
                                                                 ("backward", "forward")]
    fig = nc.plot(result)
    titles = [a.get_title(loc="left") for a in fig.axes]
    speed, drive = fig.axes[titles.index("v")], fig.axes[titles.index("drive")]
    bands = [(p.get_x(), p.get_x() + p.get_width()) for p in speed.patches]
    t = [e["t"] for e in result.event_list]
    assert bands == [pytest.approx((0.0, t[0])), pytest.approx((t[0], t[1])), pytest.approx((t[1], t[2])),
                     pytest.approx((t[2], 5.0))]
    assert [p.get_facecolor()[:3] for p in speed.patches][:2] == [matplotlib.colors.to_rgb(plot.MODE_COLORS["stuck"]),
                                                                  matplotlib.colors.to_rgb(plot.MODE_COLORS["forward"])]
    assert not drive.patches and not drive.collections       # the drive's panel is not the mass's
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    assert legend == ["mode stuck (shaded)", "mode forward (shaded)", "mode backward (shaded)"]


def test_events_of_a_block_no_panel_shows_go_on_every_panel():
    result = _without_columns(clutches_result())           # no columns: no panel owns a block
    fig = nc.plot(result)
    assert all(a.patches for a in fig.axes)


def test_events_are_block_and_target_mode():
    result = clutches_result()
    evs = plot.events(result)
    assert len(evs) == len(result["events"]) >= 5
    first = result["events"][0]
    assert evs[0] == (first["t"], first["block"], first["to"], first["kind"], first["from"])
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
    assert info == {"panels": 8, "series": 1 + 1 + 1 + 3 + 2 + 2 + 1, "events": 0}
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
    modes = {ev["to"] for ev in result["events"]} | {ev["from"] for ev in result["events"]}
    for mode in modes - set(plot.UNSHADED_MODES):
        assert text.count(f"mode {mode} (shaded)") == 1          # one legend entry per mode
    assert "-&gt;" + result["events"][0]["to"] not in text       # no per-event "block:from->to" labels
    fig = nc.plot(result)
    by_title = {a.get_title(loc="left"): a for a in fig.axes}
    bands = plot.mode_bands(plot.events(result), (0.0, 1.2))
    for k in (1, 2, 3):            # a clutch's relative sensors' panels show that clutch's modes only
        own = [(t0, t1) for t0, t1, mode in bands.get(f"clutch{k}", []) if mode not in plot.UNSHADED_MODES]
        drawn = [(p.get_x(), p.get_x() + p.get_width()) for p in by_title[f"clutch{k}.w_rel"].patches]
        assert drawn == [pytest.approx(b) for b in own]
    assert sum(len(a.patches) for a in fig.axes) > 0


def test_line_events_are_one_legend_entry_per_kind(tmp_path):
    result = {"status": "ok", "time": [0.0, 0.5, 1.0], "workspace": {"y": [[0.0], [1.0], [2.0]]},
              "events": [{"t": 0.2, "block": "b", "kind": "contact", "from": "open", "to": "contact"},
                         {"t": 0.4, "block": "b", "kind": "contact", "from": "contact", "to": "open"},
                         {"t": 0.6, "block": "b", "kind": "contact", "from": "open", "to": "contact"}]}
    fig = nc.plot(result)
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["b -> contact: 2", "b -> open: 1"]
    assert len(fig.axes[0].collections) == 2 and not fig.axes[0].patches


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


def test_diagram_paths_resolve_from_the_diagrams_folder_not_the_results(tmp_path, capsys):
    model, results = tmp_path / "model", tmp_path / "results"
    model.mkdir()
    results.mkdir()
    (model / "data.csv").write_text("t,u\n0,1\n0.5,2\n")
    d = diagram([blk("src", "fileSource", FileName="data.csv"), blk("m", "mux", inputs=2), blk("s", "sine"),
                 record()], [wire("src", "m", 0, 0), wire("s", "m", 0, 1), wire("m", "w")], duration=1.0)
    (model / "d.json").write_bytes(orjson.dumps(d))
    (results / "r.json").write_bytes(orjson.dumps(_without_columns(nc.simulate(d, base_dir=str(model)))))
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        assert main(["plot", str(results / "r.json"), "--diagram", str(model / "d.json"),
                     "-o", str(tmp_path / "named.svg")]) == 0
    assert orjson.loads(capsys.readouterr().out)["panels"] == 2
    text = (tmp_path / "named.svg").read_text()
    assert "y: src" in text and "y: s" in text


def test_cli_picks_variables_compares_and_needs_an_output_or_a_window(tmp_path, capsys):
    d = position_speed_force()
    src, res, other = tmp_path / "d.json", tmp_path / "r.json", tmp_path / "o.json"
    src.write_bytes(orjson.dumps(d))
    res.write_bytes(orjson.dumps(nc.simulate(d)))
    d["blocks"][0]["params"]["Amplitude"] = 10
    other.write_bytes(orjson.dumps(nc.simulate(d)))
    mixed = tmp_path / "mixed.json"
    mixed.write_bytes(orjson.dumps(nc.simulate(mixed_diagram())))
    assert main(["plot", str(mixed), "--vars", "sine_arr,vec", "--vars", "sc", "-o", str(tmp_path / "p.png")]) == 0
    assert orjson.loads(capsys.readouterr().out)["panels"] == 4                 # sine_arr, vec, sc: s, sc: r
    assert main(["plot", str(res), "--compare", str(other), "--overlay", "-o", str(tmp_path / "c.png")]) == 0
    assert orjson.loads(capsys.readouterr().out) == {"status": "ok", "output": str(tmp_path / "c.png"),
                                                     "panels": 1, "series": 3, "events": 0}
    assert main(["plot", str(res)]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "plot_no_output"
    assert main(["plot", str(res), "--vars", "nope", "-o", str(tmp_path / "n.png")]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "unknown_variable"
    # a window needs an interactive backend; here (no display) the answer is typed
    with matplotlib.rc_context({"backend": "agg"}):
        assert main(["plot", str(res), "--show"]) == 1
    assert orjson.loads(capsys.readouterr().out)["error"]["code"] == "plot_no_display"
