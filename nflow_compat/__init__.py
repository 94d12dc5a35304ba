"""nflow-compat: run Nelson nflow block diagrams (the JSON given to __nflow_simulate__)."""
from .api import compile_plan, linmod, simulate, simulate_json, simulate_to, trim, validate
from .diagram import Limits
from .errors import DiagramError, NFlowError, SimulationError
from .sweeps import sweep

__all__ = ["simulate_json", "simulate_to", "simulate", "validate", "compile_plan", "linmod", "trim", "sweep", "Limits",
           "NFlowError", "DiagramError", "SimulationError"]
__version__ = "0.1.0"
