"""The integration methods the hybrid driver (``engine.hybrid``) steps, every one a
``scipy.integrate.OdeSolver``: scipy's own variable-step methods and nflow's fixed-step
ones (``fixed``), so that one loop drives them all.

'dae' -> LSODA (ODEPACK: Adams for non-stiff stretches, BDF when stiffness is detected).
The islands are index-reduced by construction (accelerations and stuck forces come from a
KKT solve inside derivative()), so the "DAE" is an ODE; what the reference tool's DASSL
brings on top of an explicit method is stiff stability (stiff compliant elements such as
c=1e5 spring-dampers next to light inertias). LSODA gives that automatically and is a
multistep BDF-family code like DASSL. Measured (rtol 1e-6): CoupledClutches 0.05 s,
Translational.Friction 0.23 s, a c=1e5 spring-damper + brake 0.04 s, versus RK45
0.08/0.30/1.5 s, Radau 0.15/0.7/0.3 s and BDF 0.13/0.47/0.11 s, with every MSL event
instant within ~6e-6 s of the reference. Radau/BDF stay available by name.
"""
from __future__ import annotations

from scipy import integrate

from ...errors import SimulationError
from .fixed import ClassicalRK4, FixedStep, ForwardEuler

# name -> solver class: nflow's solver names, and scipy's under their own
METHODS = {
    "ode45": integrate.RK45,
    "dae": integrate.LSODA,
    "ode23": integrate.RK23,
    "ode15s": integrate.BDF,
    "ode1": ForwardEuler,
    "ode4": ClassicalRK4,
    **{cls.__name__: cls for cls in (integrate.RK45, integrate.RK23, integrate.DOP853, integrate.Radau,
                                     integrate.BDF, integrate.LSODA)},
}
FIXED_STEP = tuple(name for name, cls in METHODS.items() if issubclass(cls, FixedStep))

__all__ = ["METHODS", "FIXED_STEP", "FixedStep", "ForwardEuler", "ClassicalRK4", "solver_class"]


def solver_class(name: str):
    try:
        return METHODS[name]
    except KeyError:
        raise SimulationError("unknown_solver", f"unknown solver {name!r}; use one of {sorted(METHODS)}") from None
