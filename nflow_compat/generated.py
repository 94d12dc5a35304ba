"""The one place the package runs Python source it generated: the plan's fixed-step function
(``engine.codegen``) and the closures of element-wise blocks (``blocks.pointwise``), both
made of the handlers' own templates only (no block id, parameter value or user string
becomes source; tests/system/test_security.py allows ``exec`` here alone).

The source of a plan's step function depends on the diagram's structure only (values enter
as arguments), so the same source comes back when a plan is compiled again with other
values (``Plan.with_params``, a sweep's runs): the last ``KEPT`` code objects are kept
and only run again."""
from __future__ import annotations

KEPT = 64
_CODES: dict = {}      # (source, filename) -> code object, the most recently used last


def _keep(key: tuple, code):
    if len(_CODES) >= KEPT:
        del _CODES[next(iter(_CODES))]
    _CODES[key] = code
    return code


def run_generated(source: str, filename: str, names: dict) -> dict:
    """The namespace ``source`` leaves when run with ``names`` as its only globals (no
    builtins: everything it uses enters by name)."""
    namespace = {"__builtins__": {}, **names}
    key = (source, filename)
    code = _CODES.pop(key, None)
    if code is not None:
        _CODES[key] = code
    exec(code or _keep(key, compile(source, filename, "exec")), namespace)  # safe: generated from handler templates
    return namespace
