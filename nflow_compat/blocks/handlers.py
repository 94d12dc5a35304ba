"""The registry of the types the package runs, filled on demand: importing a handler module
registers its blocks in ``REGISTRY``, and a module is imported when a diagram first uses one
of its library's types (``handlers_for``; a type with a module of its own, ``LOADER_OF_TYPE``,
loads just that one). So a causal diagram never imports the physical layer (and scipy with
it), FMPy, the Modelica front end, or the handler modules of libraries it does not use; only
``load_all`` (``nflow-sim blocks``, the docs) imports every one. Kept apart from
``blocks/__init__`` (the handler contract the modules import) so that nothing imports in a
circle.

The lazy imports are this module's loaders: one static ``from . import <module>`` each, so
the import graph (tests/system/test_import_graph.py) still sees every edge."""
from __future__ import annotations

from ..manifests import block_types
from . import REGISTRY, Handler


# Each loader imports one handler module (importing it registers its blocks).
def _source():
    from . import source  # noqa: F401


def _sink():
    from . import sink  # noqa: F401


def _math():
    from . import math  # noqa: F401


def _logic():
    from . import logic  # noqa: F401


def _nonlinear():
    from . import nonlinear  # noqa: F401


def _discrete():
    from . import discrete  # noqa: F401


def _continuous():
    from . import continuous  # noqa: F401


def _utility():
    from . import utility  # noqa: F401


def _mechanical():
    from . import mechanical  # noqa: F401   (the acausal blocks: the physical layer, scipy)


def _lookup():
    from . import lookup  # noqa: F401


def _dashboard():
    from . import dashboard  # noqa: F401


def _userdefined():
    from . import userdefined  # noqa: F401


def _fmi():
    from . import fmi  # noqa: F401


def _modelica():
    from . import modelica  # noqa: F401   (rumoca itself only when a block compiles its source)


# manifest library -> the loader of the module that registers its types, in the order the
# modules have always registered (tests check each module registers exactly its libraries' types)
LOADER_OF_LIBRARY = {
    "source": _source, "sink": _sink, "math": _math, "logic": _logic, "nonlinear": _nonlinear,
    "discrete": _discrete, "continuous": _continuous, "utility": _utility,
    "acausal_translational": _mechanical, "acausal_rotational": _mechanical, "acausal_electrical": _mechanical,
    "acausal_thermal": _mechanical, "acausal_planar": _mechanical,
    "lookup": _lookup, "dashboard": _dashboard, "userdefined": _userdefined, "fmi": _fmi,
}
# a type registered by a module of its own, not its library's (nflow lists the modelica block
# with the FMU blocks; an FMU diagram need not load the Modelica front end)
LOADER_OF_TYPE = {"modelica": _modelica}


def _loader(manifests, t):
    return LOADER_OF_TYPE.get(t) or LOADER_OF_LIBRARY[manifests[t].library]


def handlers_for(types) -> dict[str, Handler]:
    """type -> handler, with the handler modules of ``types`` (manifest type names) loaded;
    a type without a handler (not runnable) is absent."""
    manifests = block_types()
    for loader in {_loader(manifests, t) for t in types}:
        loader()
    return REGISTRY


def load_all() -> dict[str, Handler]:
    """type -> handler, for every type a handler module registers."""
    for loader in dict.fromkeys([*LOADER_OF_LIBRARY.values(), *LOADER_OF_TYPE.values()]):
        loader()
    return REGISTRY


def supported_types() -> list:
    """Every type with both a manifest entry and a handler: what `nflow-sim blocks` lists."""
    types = block_types()
    return [{"type": t, "library": types[t].library, "label": types[t].label}
            for t in sorted(load_all(), key=lambda t: (types[t].library, t.lower())) if t in types]
