"""The one place the package runs Python source it generated: the plan's fixed-step function
(``engine.codegen``) and the closures of element-wise blocks (``blocks.pointwise``), both
made of the handlers' own templates only (no block id, parameter value or user string
becomes source; tests/system/test_security.py allows ``exec`` here alone)."""
from __future__ import annotations


def run_generated(source: str, filename: str, names: dict) -> dict:
    """The namespace ``source`` leaves when run with ``names`` as its only globals (no
    builtins: everything it uses enters by name)."""
    namespace = {"__builtins__": {}, **names}
    exec(compile(source, filename, "exec"), namespace)  # safe: generated from handler templates
    return namespace
