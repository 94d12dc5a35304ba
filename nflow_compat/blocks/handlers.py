"""Every handler module, loaded: importing one registers its blocks in ``REGISTRY``, so this
module is the registry of the types the package runs. Kept apart from ``blocks/__init__``
(the handler contract the modules import) so that nothing imports in a circle."""
from __future__ import annotations

from ..manifests import block_types
from . import REGISTRY, Handler
# grouped like nflow's libraries, in the order they have always registered
from . import (  # noqa: F401  (imported to register their blocks)
    source, sink, math, logic, nonlinear, discrete, continuous, utility, mechanical, lookup, dashboard, userdefined,
    fmi, modelica,
)


def load_all() -> dict[str, Handler]:
    """type -> handler, for every type a handler module registers."""
    return REGISTRY


def supported_types() -> list:
    """Every type with both a manifest entry and a handler: what `nflow-sim blocks` lists."""
    types = block_types()
    return [{"type": t, "library": types[t].library, "label": types[t].label}
            for t in sorted(load_all(), key=lambda t: (types[t].library, t.lower())) if t in types]
