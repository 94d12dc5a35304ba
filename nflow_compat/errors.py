"""Typed errors: every failure a user can cause is one of these, never a traceback.

Modelled on jsonschema's error objects: a stable ``code``, a human ``message``, and
where it applies the JSON pointer ``path`` into the diagram, the ``block`` id and the
``param`` name.
"""
from __future__ import annotations

import difflib

_MAX_MESSAGE = 500  # never echo megabytes of input back


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


class NFlowError(Exception):
    """Base of every error the package raises on purpose."""

    kind = "error"

    def __init__(self, code: str, message: str, *, path: str | None = None,
                 block: str | None = None, param: str | None = None, **extra):
        self.code = code
        self.message = _clip(message)
        self.path = path
        self.block = block
        self.param = param
        self.extra = extra
        super().__init__(self.message)

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "code": self.code, "message": self.message}
        for key in ("path", "block", "param"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.code!r}, {self.message!r})"


class DiagramError(NFlowError):
    """The diagram is wrong: bad JSON, unknown types, bad params, bad wiring."""

    kind = "diagram"


class SimulationError(NFlowError):
    """The diagram is valid but running it failed (loop did not converge, limits, ...)."""

    kind = "simulation"


def pointer(*parts) -> str:
    """JSON pointer (RFC 6901) from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def did_you_mean(name: str, choices) -> str:
    """"; did you mean 'X'?" for the closest of ``choices`` (case-insensitive first), or ""."""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    if name.lower() in lowered:
        return f"; did you mean {lowered[name.lower()]!r}?"
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
