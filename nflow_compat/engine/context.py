"""The run context every handler sees: time, step, stop flag, events, warnings."""
from __future__ import annotations


class Ctx:
    __slots__ = ("t", "dt", "n_samples", "k", "stop", "side_effect_free", "events", "warnings", "shared")

    def __init__(self, dt: float, n_samples: int = 0):
        self.dt = dt
        self.n_samples = n_samples   # grid points of a run (recorders size their arrays by it)
        self.shared = {}   # per-plan objects blocks share (io.shared); they reset themselves at INIT
        self.reset()

    def reset(self):
        self.t = 0.0
        self.k = 0
        self.stop = False
        self.side_effect_free = False
        self.events = []
        self.warnings = []
