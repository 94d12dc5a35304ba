"""nflow-compat: run Nelson nflow block diagrams (the JSON given to __nflow_simulate__)."""
from .api import compile_plan, linmod, run, simulate, simulate_json, simulate_to, trim, validate
from .diagram import Limits
from .errors import DiagramError, NFlowError, SimulationError
from .plotting import plot
from .result import Result
from .sweeps import sweep

__all__ = ["simulate_json", "simulate_to", "simulate", "run", "Result", "plot", "validate", "compile_plan",
           "linmod", "trim", "sweep", "Limits", "NFlowError", "DiagramError", "SimulationError"]


def __getattr__(name: str):
    """``__version__``, read from the installed metadata (``pyproject.toml`` holds the one
    version) on first use, so importing the package does not scan ``sys.path`` for it."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version("nflow-compat")
        except PackageNotFoundError:          # the source on sys.path, never installed
            return "0+unknown"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
