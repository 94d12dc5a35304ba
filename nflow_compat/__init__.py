"""nflow-compat: run Nelson nflow block diagrams (the JSON given to __nflow_simulate__)."""
from .api import compile_plan, run, simulate, simulate_json, simulate_to, validate
from .diagram import Limits
from .errors import DiagramError, NFlowError, SimulationError
from .plotting import plot
from .result import Result
from .sweeps import sweep

__all__ = ["simulate_json", "simulate_to", "simulate", "run", "Result", "plot", "validate", "compile_plan", "sweep",
           "Limits", "NFlowError", "DiagramError", "SimulationError"]
__version__ = "0.1.0"
