"""Physical (acausal) networks: 1-D mechanics with MSL 4.1.0 stick-slip friction.

``Network`` collects elements and pin connections; ``Network.build()`` returns one
``Island`` (a hybrid system for ``engine.hybrid.integrate_hybrid``) per connected component.
"""
from .events import PhysicalEvent
from .friction import (BACKWARD, FORWARD, FREE, MODE_NAMES, STUCK, UNKNOWN, FrictionState,
                       StribeckStopLaw, Table1D, TableFrictionLaw)
from .network import Island, Network

__all__ = ["Network", "Island", "PhysicalEvent", "FrictionState", "StribeckStopLaw",
           "TableFrictionLaw", "Table1D", "MODE_NAMES", "UNKNOWN", "FREE", "FORWARD", "STUCK",
           "BACKWARD"]
