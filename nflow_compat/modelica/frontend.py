"""rumoca, the Modelica compiler (the optional extra ``modelica``), and the per-process cache
of what it compiled.

rumoca parses the source, resolves the classes it uses in the library roots, instantiates
and flattens the model (``Session(roots).loads(source, model=...)``); its flat model is read
by ``flat.read``. rumoca is imported only when a modelica block is compiled. It is pinned
to the release series this reader was written against (``RUMOCA_SERIES``): another one is
``modelica_unavailable``, as is a missing rumoca.

The cache holds the read flat models by a hash of the source text, the model name, the
library roots and the (path, size, modification time) of every ``.mo`` file under them, at
most ``CACHE_SIZE`` of them (least recently used first out): a serve process or a sweep
worker compiles a model once, and an edited library file is seen. rumoca keeps its own
cache of parsed library files on disk (under ``$XDG_CACHE_HOME/rumoca``).
"""
from __future__ import annotations

import collections
import functools
import hashlib
import os
import re
import threading
from pathlib import Path

from ..errors import SimulationError
from . import flat as flat_model
from .symbolic import ModelicaUnsupported

RUMOCA_SERIES = "0.10."       # the rumoca releases whose flat model ``flat`` reads
CACHE_SIZE = 32
MESSAGE_LINES = 4             # lines of rumoca's message kept in an error


@functools.cache
def rumoca():
    """The rumoca module, checked (SimulationError ``modelica_unavailable`` otherwise)."""
    try:
        import rumoca as module
    except ImportError:
        raise SimulationError("modelica_unavailable", "modelica blocks need the Python package rumoca: "
                              "pip install 'nflow-compat[modelica]'") from None
    version = str(module.version())
    if not version.startswith(RUMOCA_SERIES):
        raise SimulationError("modelica_unavailable", f"rumoca {version} is installed; modelica blocks read the "
                              f"flat model of rumoca {RUMOCA_SERIES}x: pip install 'nflow-compat[modelica]'")
    return module


class CompileFailed(Exception):
    """rumoca refused the model: its message, and the line it names (or None)."""

    def __init__(self, message: str, line: int | None = None):
        super().__init__(message)
        self.message, self.line = message, line


class Loaded:
    """One compiled model: its flat model (read), the kinds of its parameters, and the
    source map for error messages (asked of rumoca only when one is needed)."""

    def __init__(self, model, flat: flat_model.FlatModel, roots, parameter_kinds: dict):
        self._model = model
        self.flat = flat
        self.roots = roots
        self.parameter_kinds = parameter_kinds
        self._lines = None

    @property
    def lines(self) -> flat_model.SourceLines:
        if self._lines is None:
            try:
                files = self._model.to_dict("dae")["source_map"]["files"]
            except Exception:   # rumoca's own failure: positions are then not named
                files = []
            self._lines = flat_model.SourceLines(files, [str(r.parent if r.is_file() else r) for r in self.roots])
        return self._lines

    def describe(self, pos) -> str | None:
        return self.lines.describe(pos)


_CACHE: collections.OrderedDict = collections.OrderedDict()
_LOCK = threading.Lock()


def library_roots(extra=()) -> list:
    """The library roots: ``extra`` (the block's ``libraries``, already confined to the base
    directory), then the directories of ``MODELICAPATH`` (as OpenModelica reads it:
    separated by the platform's path separator; missing ones skipped)."""
    roots = [Path(p) for p in extra]
    for entry in os.environ.get("MODELICAPATH", "").split(os.pathsep):
        if entry.strip() and Path(entry).is_dir():
            roots.append(Path(entry).resolve())
    return roots


def _roots_signature(roots) -> bytes:
    h = hashlib.sha256()
    for root in roots:
        h.update(str(root).encode() + b"\0")
        files = [root] if root.is_file() else sorted(root.rglob("*.mo"))
        for path in files:
            try:
                info = path.stat()
            except OSError:
                continue
            h.update(f"{path}\0{info.st_size}\0{info.st_mtime_ns}\n".encode())
    return h.digest()


def cache_key(text: str, model_name: str, roots) -> str:
    h = hashlib.sha256()
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\0" + model_name.encode() + b"\0" + _roots_signature(roots))
    return h.hexdigest()


def load(text: str, filename: str, model_name: str, roots) -> Loaded:
    """The model ``model_name`` of the Modelica ``text`` (named ``filename`` in rumoca's
    messages), compiled with ``roots``: from the cache, else by rumoca (CompileFailed when
    it refuses the model, ModelicaUnsupported when the flat model has what ``flat`` does
    not read)."""
    module = rumoca()
    key = cache_key(text, model_name, roots)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    try:
        session = module.Session([str(r) for r in roots])
        model = session.loads(text, model=model_name, filename=filename)
        flat = model.to_dict("flat")
        kinds = {p.name: p.kind for p in model.parameters}
    except (KeyboardInterrupt, SystemExit, MemoryError):
        raise
    except BaseException as exc:   # rumoca's errors, and a Rust panic (pyo3's PanicException is a BaseException)
        raise CompileFailed(*_rumoca_message(exc, filename, _diagnostics(module, text, model_name, filename))) \
            from None
    loaded = Loaded(model, None, list(roots), kinds)
    try:
        loaded.flat = flat_model.read(flat, model_name)
    except ModelicaUnsupported as exc:
        exc.loaded = loaded
        raise
    with _LOCK:
        _CACHE[key] = loaded
        while len(_CACHE) > CACHE_SIZE:
            _CACHE.popitem(last=False)
    return loaded


_LOCATION = re.compile(r"\[([^\]\[]+?):(\d+):(\d+)\]")
_DRAWING = re.compile(r"^[\s│╭╰─┬·×├┤┌┐└┘|:.0-9]*$")


def _diagnostics(module, text, model_name, filename) -> str:
    """rumoca's diagnostics of the source (a syntax error's place), as text ("" if none)."""
    try:
        return "\n".join(str(d.message) for d in module.validate_source(text, model=model_name, filename=filename))
    except BaseException as exc:   # the same failures as the compile's
        if isinstance(exc, (KeyboardInterrupt, SystemExit, MemoryError)):
            raise
        return ""


def _rumoca_message(exc, filename: str, diagnostics: str = ""):
    """rumoca's message made plain (its box drawing, failure summaries and error codes
    dropped, a few lines) and the line of ``filename`` it, or the diagnostics, point at."""
    text = str(exc) or type(exc).__name__
    line = None
    for match in _LOCATION.finditer(text + "\n" + diagnostics):
        if match.group(1).endswith(filename):
            line = int(match.group(2))
            break
    kept = []
    for raw in text.splitlines():
        stripped = raw.strip()
        if not stripped or _DRAWING.match(stripped) or stripped.startswith(("╭", "╰", "·", "│", "Related failures")):
            continue
        stripped = re.sub(r"^-\s*\S+ \[\w+\]:\s*", "", stripped)
        stripped = re.sub(r"^\S+ could not be compiled(?: because)?:?\s*", "", stripped)
        stripped = stripped.lstrip("×").strip()
        if stripped and stripped not in kept:
            kept.append(stripped)
        if len(kept) >= MESSAGE_LINES:
            break
    return "; ".join(kept) or type(exc).__name__, line


def clear_cache():
    with _LOCK:
        _CACHE.clear()
