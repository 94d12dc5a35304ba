"""The request loop of ``nflow-sim serve`` (nflow_compat/serve.py), in-process: how lines become
requests, and the plan cache (a repeated request runs on the first one's plan, to the same
bytes). The server as a process: tests/system/test_serve.py."""
from __future__ import annotations

import io

import orjson

from nflow_compat import serve
from nflow_compat.serve import PlanCache, Server, requests
from tests.engine.both_ways import corpus
from tests.util import blk, constant, diagram, record, wire

GAIN = orjson.dumps(diagram([constant("c", 2.0), blk("g", "gain", Gain=3), record()],
                            [wire("c", "g"), wire("g", "w")], duration=0.3))


def lines(data: bytes, limit: int = 10) -> list:
    return list(requests(io.BytesIO(data), limit))


def test_lines_become_requests():
    assert lines(b'{"a":1}\n\n  \t\n{"b":2}\r\n{"c":3}') == [b'{"a":1}', b'{"b":2}', b'{"c":3}']
    assert lines(b"") == [] and lines(b"\n\r\n") == []


def test_a_line_over_the_limit_is_none_and_the_next_one_is_read():
    exact = b"x" * 10
    assert lines(exact + b"\r\n" + b"y" * 11 + b"\n" + exact) == [exact, None, exact]
    assert lines(b"z" * 100_000 + b"\nok") == [None, b"ok"]          # read past in chunks
    assert lines(b"z" * 11) == [None]                                 # the last line, unfinished


def _without_wall(reply) -> dict:
    doc = orjson.loads(reply)
    doc.get("stats", {}).pop("wall_s", None)
    return doc


def test_a_repeated_request_runs_on_the_cached_plan_to_the_same_bytes():
    server = Server()
    first = _without_wall(server.answer(GAIN))
    plan = server.cache.get(GAIN)
    assert plan is not None and first["workspace"]["y"] == [[6.0]] * 4
    assert _without_wall(server.answer(GAIN)) == first and server.cache.get(GAIN) is plan


def test_every_fixture_gives_the_same_reply_on_its_reused_plan():
    server = Server()
    reused = 0
    for name, path in corpus():
        if name.startswith("examples/"):      # long runs; the fixtures cover their blocks
            continue
        doc = orjson.loads(path.read_bytes())
        text = orjson.dumps(doc.get("diagram", doc))
        first = _without_wall(server.answer(text))
        reused += server.cache.get(text) is not None
        assert _without_wall(server.answer(text)) == first, name
    assert reused > 200


def test_the_cache_keeps_the_last_plans_and_no_file_bound_or_big_one(tmp_path):
    cache = PlanCache(size=2)
    server = Server(base_dir=tmp_path)
    server.cache = cache
    texts = [orjson.dumps(diagram([constant("c", float(k)), record()], [wire("c", "w")])) for k in range(3)]
    for text in texts:
        server.answer(text)
    assert list(cache.plans) == texts[1:]
    (tmp_path / "in.csv").write_text("0,1\n")
    source = orjson.dumps(diagram([blk("f", "fileSource", FileName="in.csv"), record()], [wire("f", "w")]))
    big = orjson.dumps(diagram([constant("c", 1.0), record()], [wire("c", "w")], dt=1e-5, duration=1.0))
    for text in (source, big):
        assert orjson.loads(server.answer(text))["status"] == "ok"
        assert cache.get(text) is None
    assert len(big) < serve.CACHED_REQUEST_BYTES


def test_errors_are_reply_lines():
    server = Server()
    assert orjson.loads(server.answer(b"{oops"))["error"]["code"] == "bad_json"
    assert orjson.loads(server.answer(None))["error"]["code"] == "input_too_large"
    assert not server.cache.plans


def test_every_cache_a_request_can_fill_has_a_size_limit():
    # what lets a long-running server keep its memory bounded over requests it has never seen
    import inspect
    import sys

    from nflow_compat.blocks.handlers import load_all
    load_all()
    import nflow_compat.physical.islands  # noqa: F401
    cached = [(name, attr) for name, module in list(sys.modules.items()) if name.startswith("nflow_compat")
              for attr in vars(module).values() if hasattr(attr, "cache_info") and hasattr(attr, "__wrapped__")]
    assert len(cached) >= 6
    unbounded = [f"{name}.{fn.__wrapped__.__name__}" for name, fn in cached
                 if fn.cache_info().maxsize is None and inspect.signature(fn.__wrapped__).parameters]
    assert unbounded == []
