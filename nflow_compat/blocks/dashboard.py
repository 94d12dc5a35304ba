"""nflow's Dashboard library, run headless.

nflow registers two kinds of dashboard blocks (DashboardHandlers.cpp):

* observers (dashboardScope, Display, Gauge, HalfGauge, QuarterGauge, LinearGauge, Lamp,
  MultiStateImage): no ports; at AFTER_STEP of every step they copy the values of the
  signal their ``Binding`` names, ``{"kind": "signal", "blockPath": "<block id>",
  "outputPortIndex": 1-based}``. They have no decimation and the handler keeps the raw
  values only (limits, colors, states and images are the widget's business). Here each
  records under ``scopes[<id>]``: ``{type, time, value}`` with the latest sample, or for
  dashboardScope the whole series ``{type, time, values}`` (N x W, like scope).
* controls (Edit, Knob, Slider, PushButton, RotarySwitch, RadioButton, ComboBox, CheckBox,
  RockerSwitch, SliderSwitch, ToggleSwitch, CallbackButton): interactive widgets that
  write a bound parameter from the UI; nflow gives them no phases and they declare no
  ports. Headless nobody touches them, so they do nothing; an instance that declares
  output ports emits the control's resting value on each (see ``_RESTING``).

The binding is resolved once, at compile time. An unknown block or port is a
``binding_unresolved`` error (nflow silently shows nothing); a blockPath into a subsystem
(``["sub", "g"]``) names the flattened inner block ``sub/g`` (see ``nflow_compat.flatten``);
one that names no subsystem is ``binding_unsupported``. An empty Binding (the manifest default) binds
nothing: the block records no value and the run carries a warning.
"""
from __future__ import annotations

import math

import numpy as np

from ..errors import did_you_mean
from ..expr import evaluate
from ..results import Recording
from . import Phases, block, no_outputs, scalar_out

OBSERVERS = ("dashboardScope", "dashboardDisplay", "dashboardGauge", "dashboardHalfGauge",
             "dashboardQuarterGauge", "dashboardLinearGauge", "dashboardLamp", "dashboardMultiStateImage")
CONTROLS = ("dashboardEdit", "dashboardKnob", "dashboardSlider", "dashboardPushButton", "dashboardRotarySwitch",
            "dashboardRadioButton", "dashboardComboBox", "dashboardCheckBox", "dashboardRockerSwitch",
            "dashboardSliderSwitch", "dashboardToggleSwitch", "dashboardCallbackButton")

_EMPTY = (None, {}, [], "")


# ----------------------------------------------------------------------------- bindings

def _port_index(io, raw) -> int:
    """outputPortIndex (1-based, default 1) as a 0-based port; below 1 reads as 1 and a
    fraction is truncated, as nflow's max(1, int) - 1 does."""
    value = raw.get("outputPortIndex", 1)
    if value is None:
        value = 1
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            value = None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        io.fail("param_type", f"Binding outputPortIndex must be a whole number (1 = the first output), "
                f"got {raw.get('outputPortIndex')!r}", "Binding")
    return max(1, int(value)) - 1


def _output_count(io, block_id: str) -> int:
    n = 0
    while io.slot_of(block_id, n) is not None:
        n += 1
    return n


def resolve_binding(io):
    """The signal slot the block's Binding names, or None when the Binding is empty."""
    raw = io.params.get("Binding")
    if raw in _EMPTY:
        return None
    if not isinstance(raw, dict):
        io.fail("param_type", 'Binding must be an object {"kind": "signal", "blockPath": "<block id>", '
                f'"outputPortIndex": 1}}, got {type(raw).__name__}', "Binding")
    if raw.get("kind") != "signal":
        io.fail("binding_unsupported", f"Binding kind {raw.get('kind')!r}: an observer shows a signal, "
                "so only kind 'signal' is read", "Binding")
    path = raw.get("blockPath")
    if isinstance(path, str):
        parts = [path] if path else []
    elif isinstance(path, list):   # nflow skips empty and non-string entries
        parts = [p for p in path if isinstance(p, str) and p]
    else:
        parts = []
    if not parts:
        io.fail("binding_unresolved", "Binding has no blockPath (the id of the block whose output to show)",
                "Binding")
    if len(parts) > 1:
        io.fail("binding_unsupported", f"Binding blockPath {parts!r} reaches into a subsystem that the diagram "
                "does not have; a path [<subsystem id>, ..., <block id>] must follow nested subsystems", "Binding")
    target, port = parts[0], _port_index(io, raw)
    slot = io.slot_of(target, port)
    if slot is None:
        count = _output_count(io, target)
        if count:
            io.fail("binding_unresolved", f"Binding outputPortIndex {port + 1}: block {target!r} has "
                    f"{count} output port(s)", "Binding")
        ids = io.block_ids
        io.fail("binding_unresolved", f"Binding names block {target!r}, which does not exist or has no "
                f"output port" + did_you_mean(target, [i for i in ids if i != io.id]), "Binding")
    return slot


def _unbound_warning(io):
    message = (f"{io.block.type.type} block {io.id!r} is not bound to a signal (empty Binding); "
               f"it records nothing")
    ctx = io.ctx

    def init():
        ctx.warnings.append(message)
    return init


# ----------------------------------------------------------------------------- observers

def _latest_value(io, kind: str):
    """Gauge, display, lamp, image: the latest sample of the bound signal and its time."""
    slot = resolve_binding(io)
    if slot is None:
        def result():
            return "scopes", io.id, {"type": kind, "time": None, "value": np.zeros(0)}
        return Phases(init=_unbound_warning(io), result=result)
    S, ctx = io.S, io.ctx
    value, when = None, None

    def init():
        nonlocal value, when
        value, when = None, None

    def after_step():
        nonlocal value, when
        value = S[slot]   # signals are replaced, never mutated: no copy needed
        when = ctx.t

    def result():
        shown = np.zeros(0) if value is None else np.atleast_1d(np.asarray(value, dtype=float)).copy()
        return "scopes", io.id, {"type": kind, "time": when, "value": shown}
    return Phases(init=init, after_step=after_step, result=result)


def _observer(kind: str, doc: str):
    def build(io):
        return _latest_value(io, kind)
    build.__name__ = kind
    build.__doc__ = doc
    block(kind, widths=no_outputs, feedthrough=False)(build)


_observer("dashboardDisplay", "The bound signal's latest value (text display).")
_observer("dashboardGauge", "The bound signal's latest value (circular gauge; Limits and ScaleColors are drawing).")
_observer("dashboardHalfGauge", "The bound signal's latest value (180-degree gauge).")
_observer("dashboardQuarterGauge", "The bound signal's latest value (90-degree gauge).")
_observer("dashboardLinearGauge", "The bound signal's latest value (straight gauge).")
_observer("dashboardLamp", "The bound signal's latest value (the lamp picks its StateColors entry from it).")
_observer("dashboardMultiStateImage", "The bound signal's latest value (the image shown is the States entry "
                                      "matching it).")


@block("dashboardScope", widths=no_outputs, feedthrough=False)
def dashboard_scope(io):
    """Every sample of the bound signal with its time: ``{type, time, values}``, one row
    per step and one column per element (nflow's scopeSeries + xSeries). TimeSpan,
    YLimits and the rest are plot settings."""
    slot = resolve_binding(io)
    if slot is None:
        def result():
            return "scopes", io.id, {"type": "dashboardScope", "time": np.zeros(0), "values": np.zeros((0, 0))}
        return Phases(init=_unbound_warning(io), result=result)
    S, ctx = io.S, io.ctx
    sample = S[slot]
    width = 1 if isinstance(sample, float) else int(np.size(sample))
    rec = Recording(ctx.n_samples, width, dtype=float)

    def result():
        times, values = rec.arrays()
        return "scopes", io.id, {"type": "dashboardScope", "time": times, "values": values}
    return Phases(init=rec.start, after_step=rec.sampler(ctx, lambda: S[slot]), result=result, recorded=rec.size)


# ----------------------------------------------------------------------------- controls

def _number(io, value, what: str, param: str) -> float:
    """A number from a structured param's field: a number, a one-element list, or an
    expression string over the diagram variables."""
    if isinstance(value, list) and len(value) == 1:
        value = value[0]
    if isinstance(value, (bool, int, float)):
        return float(value)
    if isinstance(value, str):
        result = evaluate(value, io.variables, **io.block.where(param))
        if isinstance(result, float):
            return result
    io.fail("param_type", f"{what} must be a number, got {value!r}", param)


def _first_state(io) -> float:
    """States[0].Value: the first state is where a switch, selector or radio group rests."""
    states = io.params.get("States")
    if isinstance(states, dict):   # jsonencode writes a one-element struct array as an object
        states = [states]
    if not isinstance(states, list) or not states or not isinstance(states[0], dict) or "Value" not in states[0]:
        io.fail("param_type", 'States must be a list of {"Value": number, "Label": text}, got '
                f"{states!r}", "States")
    return _number(io, states[0]["Value"], "States[0].Value", "States")


def _first_element(name: str):
    def rest(io) -> float:
        values = np.atleast_1d(np.asarray(io.params.get(name), dtype=float)).reshape(-1)
        if values.size == 0:
            io.fail("param_value", f"{name} is empty", name)
        return float(values[0])
    return rest


def _zero(io) -> float:
    return 0.0


# What each control emits when nobody operates it (headless): the first of its states,
# the unchecked value, the scale minimum, a released button (0), an empty edit field (0).
_RESTING = {
    "dashboardEdit": _zero,
    "dashboardKnob": _first_element("Limits"),
    "dashboardSlider": _first_element("Limits"),
    "dashboardPushButton": _zero,
    "dashboardCallbackButton": _zero,
    "dashboardCheckBox": _first_element("Values"),
    "dashboardRotarySwitch": _first_state,
    "dashboardRadioButton": _first_state,
    "dashboardComboBox": _first_state,
    "dashboardRockerSwitch": _first_state,
    "dashboardSliderSwitch": _first_state,
    "dashboardToggleSwitch": _first_state,
}


def _control(kind: str):
    resting = _RESTING[kind]

    def build(io):
        if not io.outs:
            return Phases()   # nflow: interactive, no phases, nothing computed
        value = resting(io)
        S, outs = io.S, tuple(io.outs)

        def output():
            for o in outs:
                S[o] = value
        return Phases(output=output)
    build.__name__ = kind
    build.__doc__ = (f"{kind}: an interactive control with no phases in nflow. Headless it does nothing; "
                     f"output ports an instance declares carry its resting value.")
    block(kind, widths=scalar_out, feedthrough=False)(build)


for _kind in CONTROLS:
    _control(_kind)
