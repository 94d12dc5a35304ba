"""``nflow-sim serve``: one process for a caller that runs many diagrams (no start-up per run).

Each line of the input is one request, a diagram's JSON text; each request gets one line of
output, in the order of the requests: the result the pipe would write for it, or its error
line ``{"status": "error", "error": {...}}`` (docs/CONTRACT.md §4, §5), after which the server
reads the next request. Each reply is flushed when written. The limits apply per request
(``max_seconds`` ends that request's run with ``time_limit``), file blocks are confined to
``base_dir`` as for the pipe.

Decided edge cases: a blank line (only whitespace) is no request and gets no reply; a line
over ``max_input_bytes`` is answered ``input_too_large`` and skipped unread (held in memory
at most up to the limit); a line may end in CRLF; the last line needs no line break. Nothing
is written on stderr per request (a caller that never reads stderr cannot block the server).
The end of the input ends the server (status 0), and so does a closed stdout (the reader has
gone; quietly, status 0). Ctrl-C is the command line's (status 130).

Memory stays bounded over any number of requests: a reply is built whole (so a request always
gets exactly one line) and dropped once written, and the only thing kept from one request to
the next is a small cache of compiled plans (``PlanCache``): a request whose bytes repeat an
earlier one is run on that one's plan (``plan.run()`` starts from INIT: the reply is the same
bytes, ``stats.wall_s`` aside), while what makes a plan big or file-bound keeps it out. A
plan's closures hold one another in cycles, which only Python's cyclic collector frees: left
to its own timing, the garbage of many requests piles up between full collections, whose
interval grows with the heap, so the peak creeps up (~1 MB over 5,000 requests here). So it
runs after each reply, over what the server made since the last import: the objects alive
when the server starts, and again after a request that imported code (a handler module, the
physical layer, scipy), are frozen out of it (``gc.freeze``; the plan cache is emptied first,
so no plan is frozen and kept from the collector), which leaves a collection ~50 us.
"""
from __future__ import annotations

import gc
import io
import os
import sys
from collections import OrderedDict

import orjson

from . import api
from .diagram import Limits
from .errors import DiagramError, NFlowError, SimulationError

CACHED_PLANS = 8                  # compiled plans kept for repeated requests
CACHED_REQUEST_BYTES = 1 << 20    # a longer request's plan is not kept
CACHED_RECORDED_VALUES = 1 << 17  # nor one whose recorders keep more numbers (8 bytes each)
SKIP_CHUNK = 1 << 16              # bytes read at a time past the end of an over-long line


class PlanCache:
    """The plans of the last ``size`` distinct requests, by their exact bytes. A plan is kept
    only when running it again cannot differ from compiling the request again: none of its
    blocks read files while compiling (``Handler.reads_files``: a file may change between
    requests), and it is small (its request and what its recorders keep)."""

    def __init__(self, size: int = CACHED_PLANS):
        self.size = size
        self.plans: OrderedDict = OrderedDict()

    def get(self, text: bytes):
        plan = self.plans.get(text)
        if plan is not None:
            self.plans.move_to_end(text)
        return plan

    def clear(self) -> None:
        self.plans.clear()

    def put(self, text: bytes, plan) -> None:
        if (len(text) > CACHED_REQUEST_BYTES or any(h.reads_files for h in plan.handlers)
                or sum(p.recorded for p in plan.phases) > CACHED_RECORDED_VALUES):
            return
        self.plans[text] = plan
        while len(self.plans) > self.size:
            self.plans.popitem(last=False)


def requests(stream, max_bytes: int):
    """The requests of the binary ``stream``: each line's bytes without its line break, or
    None for a line over ``max_bytes`` (read past, never held); blank lines are left out."""
    while True:
        line = stream.readline(max_bytes + 2)          # the limit, then CR LF
        if not line:
            return
        if len(line) == max_bytes + 2 and not line.endswith(b"\n"):
            while True:                                # the rest of the over-long line, dropped
                rest = stream.readline(SKIP_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        body = line.rstrip(b"\r\n")
        if len(body) > max_bytes:
            yield None
        elif body.strip():
            yield body


def _too_large(limit: int) -> DiagramError:
    return DiagramError("input_too_large", f"the request line has more than {limit} bytes (limit {limit}; "
                        "--limit max_input_bytes=N to raise it)", path="")


def error_line(err: NFlowError) -> bytes:
    return orjson.dumps({"status": "error", "error": err.to_dict()})


class Server:
    """Answers one request at a time (``answer``) with the pipe's reply for it."""

    def __init__(self, *, limits: Limits | None = None, base_dir=None, allow_nan: bool = False):
        self.limits = limits or Limits()
        self.base_dir = base_dir
        self.allow_nan = allow_nan
        self.cache = PlanCache()

    def answer(self, text: bytes | None):
        """The reply line (bytes, without its line break) for one request (``text`` None: a
        line over the limit)."""
        try:
            if text is None:
                raise _too_large(self.limits.max_input_bytes)
            return self._run(text)
        except NFlowError as err:
            return error_line(err)
        except MemoryError:
            pass      # answered below, once what the failed request held is released
        except Exception as exc:  # a bug of ours: still a typed reply, and the server goes on
            return error_line(SimulationError("internal_error", f"internal error: {type(exc).__name__}: {exc}"))
        return error_line(SimulationError("out_of_memory", "out of memory while answering the request"))

    def _run(self, text: bytes) -> bytes:
        plan = self.cache.get(text)
        if plan is None:
            doc = api.load_json(text, limits=self.limits)
            plan = api.compile_plan(doc, limits=self.limits, base_dir=self.base_dir, _depth_checked=True)
            self.cache.put(text, plan)
        out = io.BytesIO()
        api.run_to(out, plan, allow_nan=self.allow_nan)
        return out.getbuffer()      # the text as written, uncopied


def serve(stdin, stdout, *, limits: Limits | None = None, base_dir=None, allow_nan: bool = False) -> int:
    """Answer every request of the binary stream ``stdin`` on the binary stream ``stdout``,
    one flushed line each, until the input ends (0) or ``stdout`` is closed (0)."""
    server = Server(limits=limits, base_dir=base_dir, allow_nan=allow_nan)
    modules = _freeze(server)
    for text in requests(stdin, server.limits.max_input_bytes):
        reply = server.answer(text)
        try:
            stdout.write(reply)
            stdout.write(b"\n")
            stdout.flush()
        except BrokenPipeError:
            _discard(stdout)
            return 0
        del reply
        if len(sys.modules) != modules:     # the request imported code: freeze it out of the collector
            modules = _freeze(server)
        else:
            gc.collect()
    return 0


def _freeze(server: Server) -> int:
    """Collect, then freeze what is alive (imported code, lasting caches) out of the cyclic
    collector, with no plan among it; returns how many modules are loaded."""
    server.cache.clear()
    gc.collect()
    gc.freeze()
    return len(sys.modules)


def _discard(stdout) -> None:
    """After the reader closed ``stdout``: what is left in its buffer goes nowhere (else the
    interpreter's last flush would print a BrokenPipeError on stderr)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
    except (AttributeError, OSError, ValueError):     # not a file descriptor (a test's stream)
        pass
