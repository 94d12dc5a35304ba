"""nflow's acausal thermal library as network elements (MSL 4.1.0 Thermal.HeatTransfer).

A port carries the temperature ``T`` (K) and the heat flow ``Q_flow`` into the element.
nflow lowers thermal blocks to the same island elements as electrical ones (temperature as
potential, heat flow as current), which is why PrescribedTemperature's input is named ``V``
and PrescribedHeatFlow's ``I``. A heat capacitor is a capacitor to the absolute zero.
"""
from __future__ import annotations

import numpy as np

from .acausal import Element, SignalConductance, SignalResistance, element

_TWO = ("a", "b")


def _conduction(s, g):
    """Q_flow(a -> b) = g*(T_a - T_b)."""
    ta, tb = s.v("a"), s.v("b")
    s.branch("a", "b", [(ta, g), (tb, -g)])


@element
class HeatCapacitor(Element):
    """C*dT/dt = port.Q_flow, T(0) = T0."""
    type_name, pins = "HeatCapacitor", ("port",)

    def stamp(self, s):
        C = self.param("C", positive=True)
        T = s.v("port")
        s.flow("port", dt_terms=[(T, C)])
        s.start([(T, 1.0)], self.param("T0"))


@element
class ThermalConductor(Element):
    type_name, pins = "ThermalConductor", _TWO

    def stamp(self, s):
        _conduction(s, self.param("G"))


@element
class ThermalResistor(Element):
    type_name, pins = "ThermalResistor", _TWO

    def stamp(self, s):
        _conduction(s, 1.0 / self.param("R", nonzero=True))


@element
class Convection(SignalConductance):
    """Q_flow = Gc*(T_solid - T_fluid), Gc from input G (pins a = solid, b = fluid)."""
    type_name, pins, inputs = "Convection", _TWO, ("G",)


@element
class ConvectiveResistor(SignalResistance):
    """T_solid - T_fluid = Rc*Q_flow, Rc from input R (Rc = 0: no temperature difference)."""
    type_name, pins, inputs, unknowns = "ConvectiveResistor", _TWO, ("R",), ("Q_flow",)


@element
class BodyRadiation(Element):
    """Q_flow = Gr*(T_a^4 - T_b^4): nflow's help has no Stefan-Boltzmann factor, so its Gr
    is MSL's Gr*sigma."""
    type_name, pins = "BodyRadiation", _TWO

    def stamp(self, s):
        gr = self.param("Gr")

        def heat(z, u, t):
            ta, tb = z
            q = gr * (ta ** 4 - tb ** 4)
            da, db = 4 * gr * ta ** 3, -4 * gr * tb ** 3
            return np.array([q, -q]), np.array([[da, db], [-da, -db]])
        s.nonlinear([s.node_row("a"), s.node_row("b")], [s.v("a"), s.v("b")], heat)


class _Temperature(Element):
    """port.T = value; the heat flow it takes is an unknown."""
    pins, unknowns = ("port",), ("Q_flow",)

    def stamp(self, s):
        q, T = s.x("Q_flow"), s.v("port")
        s.flow("port", [(q, 1.0)])
        row = s.row()
        s.add(row, T, 1.0)
        s.source(row, -1.0, **self.source_value(s))


class _HeatFlow(Element):
    """A positive value heats the node: port.Q_flow = -value."""
    pins = ("port",)

    def stamp(self, s):
        s.source(s.node_row("port"), -1.0, **self.source_value(s))


# sources: nflow type -> (temperature or heat flow, the parameter or signal input of the value)
_SOURCES = {
    "FixedTemperature": (_Temperature, {"value_param": "T"}),
    "PrescribedTemperature": (_Temperature, {"inputs": ("V",)}),
    "FixedHeatFlow": (_HeatFlow, {"value_param": "Q"}),
    "PrescribedHeatFlow": (_HeatFlow, {"inputs": ("I",)}),
}
for _type, (_base, _attributes) in _SOURCES.items():
    element(type(_type, (_base,), {"type_name": _type, **_attributes}))


@element
class TemperatureSensor(Element):
    type_name, pins, outputs = "TemperatureSensor", ("port",), {0: ("across", "port", None)}

    def stamp(self, s):
        pass


@element
class RelTemperatureSensor(Element):
    type_name, pins, outputs = "RelTemperatureSensor", _TWO, {0: ("across", "a", "b")}

    def stamp(self, s):
        pass


@element
class HeatFlowSensor(Element):
    """Equal temperatures at a and b; the heat flow a -> b is the output."""
    type_name, pins, unknowns, outputs = "HeatFlowSensor", _TWO, ("Q_flow",), {0: ("unknown", "Q_flow", None)}

    def stamp(self, s):
        q = s.x("Q_flow")
        s.branch("a", "b", [(q, 1.0)])
        s.across_row("a", "b")
