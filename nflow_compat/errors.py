"""Typed errors: every failure a user can cause is one of these, never a traceback.

Modelled on jsonschema's error objects: a stable ``code``, a human ``message``, and
where it applies the JSON pointer ``path`` into the diagram, the ``block`` id and the
``param`` name.
"""
from __future__ import annotations

import difflib
import re
from typing import Any

_MAX_MESSAGE = 500  # never echo megabytes of input back
MAX_NAME = 200      # a block id, param name or JSON pointer longer than this is clipped
_LONG_WORD = re.compile(r"\S{%d,}" % (MAX_NAME + 1))


def clip_name(text):
    """``text`` (an id, a name, a pointer) cut to MAX_NAME characters with an ellipsis."""
    if isinstance(text, str) and len(text) > MAX_NAME:
        return text[: MAX_NAME - 3] + "..."
    return text


def _clip(text: str) -> str:
    """A message without megabytes of echoed input: every run of more than MAX_NAME
    non-blank characters (a huge id or name quoted in it) is cut to MAX_NAME, then the
    whole text to _MAX_MESSAGE."""
    text = str(text)
    if len(text) > MAX_NAME:
        text = _LONG_WORD.sub(lambda m: m.group()[: MAX_NAME - 3] + "...", text)
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def clip_message(text: str) -> str:
    """What ``_clip`` does to error messages, for warnings and other echoed text."""
    return _clip(text)


def _clip_extra(value):
    if isinstance(value, str):
        return clip_name(value)
    if isinstance(value, (list, tuple)):
        items = [clip_name(v) for v in value[:100]]
        return items + ["..."] if len(value) > 100 else items
    return value


class NFlowError(Exception):
    """Base of every error the package raises on purpose: a code, a message, where.

    The command line writes it as ``{"status": "error", "error": err.to_dict()}``. Texts
    taken from the input (ids, names, pointers) are cut to 200 characters each, the
    message to 500.

    Parameters
    ----------
    code : str
        A stable identifier (``unknown_param``, ``too_many_steps``, ...): test this, not
        the message.
    message : str
        What is wrong, for a person.
    path : str, optional
        The JSON pointer (RFC 6901) into the diagram (or sweep spec) where it is wrong.
    block : str, optional
        The id of the block it concerns (qualified inside subsystems: ``sub/g``).
    param : str, optional
        The parameter it concerns.
    **extra
        More facts of some errors, kept in ``extra`` and in ``to_dict()``.

    Attributes
    ----------
    kind : str
        ``"diagram"``, ``"simulation"`` (the subclasses), ``"plot"`` or ``"error"``.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> try:
    ...     nc.simulate({"blocks": [{"id": "g", "type": "gian"}], "connections": [],
    ...                  "sampleTime": 0.1, "duration": 1})
    ... except nc.NFlowError as err:
    ...     error = err.to_dict()
    >>> error["kind"], error["code"], error["path"], error["block"]
    ('diagram', 'unknown_block_type', '/blocks/0/type', 'g')
    >>> error["message"]
    "unknown block type 'gian'; did you mean 'gain'?"
    """

    kind = "error"

    def __init__(self, code: str, message: str, *, path: str | None = None,
                 block: str | None = None, param: str | None = None, **extra: Any) -> None:
        self.code = code
        self.message = _clip(message)
        self.path = clip_name(path)
        self.block = clip_name(block)
        self.param = clip_name(param)
        self.extra = {key: _clip_extra(value) for key, value in extra.items()}
        super().__init__(self.message)

    def to_dict(self) -> dict[str, Any]:
        """The error as the JSON object the command line prints: ``kind``, ``code``,
        ``message``, and ``path``, ``block``, ``param`` and ``extra``'s keys where set."""
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
    """The diagram is wrong: bad JSON, unknown types, bad params, bad wiring, a size limit.

    Raised before anything runs; the command line exits with code 2.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> try:
    ...     nc.simulate_json("{not json")
    ... except nc.DiagramError as err:
    ...     print(err.code, repr(err.path))
    bad_json ''
    """

    kind = "diagram"


class SimulationError(NFlowError):
    """The diagram is valid but running it failed: a solver or Newton failure, an algebraic
    loop that does not converge, a run-time limit, an unsupported block, ``out_of_memory``.

    The command line exits with code 1.

    Examples
    --------
    >>> import nflow_compat as nc
    >>> loop = {"blocks": [{"id": "s", "type": "sum", "inputs": 2, "params": {"Inputs": "++"}},
    ...                    {"id": "c", "type": "constant", "params": {"Value": 1}}],
    ...         "connections": [{"from": "c", "to": "s", "toIndex": 0},
    ...                         {"from": "s", "to": "s", "toIndex": 1}],
    ...         "sampleTime": 0.1, "duration": 0.1}
    >>> try:
    ...     nc.simulate(loop)
    ... except nc.SimulationError as err:
    ...     print(err.code, err.block)
    algebraic_loop s
    """

    kind = "simulation"


class SolveFailed(SimulationError):
    """An algebraic solve (Newton) that found no solution at the point it was asked about.
    At an integrator's trial point that is a rejected step (``engine.hybrid`` retries it
    smaller, as DASSL/IDA do after a corrector failure); anywhere else, and below the
    minimum step, it is the error itself (its ``code`` names what failed)."""


def out_of_memory(doing: str) -> SimulationError:
    """The typed error for a MemoryError while ``doing`` something (raise it outside the
    ``except MemoryError`` block, so the failed work's memory is released first)."""
    return SimulationError("out_of_memory", f"out of memory while {doing}; record less (Decimation, "
                           "MaxDataPoints, fewer or narrower recorders), shorten the run, or give the process "
                           "more memory")


def pointer(*parts) -> str:
    """JSON pointer (RFC 6901) from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def did_you_mean(name: str, choices) -> str:
    """"; did you mean 'X'?" for the closest of ``choices`` (case-insensitive first), or ""."""
    if len(name) > MAX_NAME:   # no name that long is close to a real one; and difflib is O(n m)
        return ""
    choices = list(choices)
    lowered = {c.lower(): c for c in choices}
    if name.lower() in lowered:
        return f"; did you mean {lowered[name.lower()]!r}?"
    close = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
