"""Closures of expression trees (``nflow_compat.modelica.evaluate``): IEEE results where Python
would raise, frozen and live relations, the event operators."""
from __future__ import annotations

import math

import pytest

from nflow_compat.modelica import symbolic as sym
from nflow_compat.modelica.evaluate import Closures, EventFlags, safe_div, safe_pow
from nflow_compat.modelica.symbolic import ModelicaUnsupported

SLOTS = {("time",): 0, ("var", "x", 0): 1, ("pre", "x", 0): 2}


def test_division_and_powers_never_raise():
    assert safe_div(1.0, 0.0) == math.inf and safe_div(-1.0, 0.0) == -math.inf and math.isnan(safe_div(0.0, 0.0))
    assert safe_div(1.0, -0.0) == -math.inf
    assert math.isnan(safe_pow(-8.0, 0.5)) and safe_pow(10.0, 400.0) == math.inf and safe_pow(0.0, -1.0) == math.inf


def test_a_frozen_relation_reads_its_committed_value_a_live_one_evaluates():
    rel = sym.Rel(0, ">", sym.Var("x"), sym.ZERO)
    committed = [0.0]
    frozen = Closures(SLOTS, committed, EventFlags(0)).build(rel)
    live = Closures(SLOTS, committed, EventFlags(0), live=True).build(rel)
    assert frozen([0.0, 1.0, 0.0]) == 0.0 and live([0.0, 1.0, 0.0]) == 1.0
    committed[0] = 1.0
    assert frozen([0.0, -1.0, 0.0]) == 1.0


def test_event_operators():
    flags = EventFlags(1)
    tick = sym.Call("sample", (sym.ZERO, sym.ONE))
    build = Closures(SLOTS, [], flags, {tick: 0}).build
    edge, change = (build(sym.Call(fn, (sym.Var("x"),))) for fn in ("edge", "change"))
    assert edge([0.0, 1.0, 0.0]) == 1.0 and edge([0.0, 1.0, 1.0]) == 0.0
    assert change([0.0, 2.0, 1.0]) == 1.0 and change([0.0, 2.0, 2.0]) == 0.0
    sample, initial = build(tick), build(sym.Call("initial", ()))
    assert sample([0.0] * 3) == 0.0 and initial([0.0] * 3) == 0.0
    flags.samples[0], flags.initial = 1.0, 1.0
    assert sample([0.0] * 3) == 1.0 and initial([0.0] * 3) == 1.0


def test_what_has_no_value_is_refused_with_its_position():
    with pytest.raises(ModelicaUnsupported) as info:
        Closures(SLOTS, [], EventFlags(0)).build(sym.Var("y", 1, pos="here"))
    assert info.value.pos == "here" and "der(y)" in info.value.message
    with pytest.raises(ModelicaUnsupported):
        Closures(SLOTS, [], EventFlags(0)).build(sym.Call("edge", (sym.add(sym.Var("x"), sym.ONE),)))
