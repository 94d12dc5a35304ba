"""Determinism: one diagram, one answer. The recorded ``workspace``, ``scopes`` and ``events``
are byte-identical run after run (same process, a reused plan, a fresh interpreter with
another hash seed) and do not depend on the order of blocks and connections in the JSON nor
on the direction in which a physical connection is written (docs/CONTRACT.md §2: physical connections
are undirected)."""
from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import nflow_compat as nc
from nflow_compat import results

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CAUSAL = ["nonlinear/hysteresis_triangle.json", "nonlinear/backlash_triangle.json", "sink/scope_ports.json",
          "continuous/integrator_feedback.json", "logic/logicalOperator_xor_parity.json", "source/chirp_sweep.json",
          "utility/mux_concat.json", "discrete/unitDelay_shift.json", "sink/toWorkspace_structure_with_time.json",
          "math/sum_signs_unconnected.json"]
MECHANICS = ("acausal_translational", "acausal_rotational")
NAMES = sorted(str(p.relative_to(FIXTURES)) for p in FIXTURES.glob("msl/*.json")) + \
    sorted(str(p.relative_to(FIXTURES)) for folder in MECHANICS for p in FIXTURES.glob(f"{folder}/*.json")) + CAUSAL
# long reference runs shortened (they keep most of their events)
DURATION = {"msl/coupled_clutches.json": 1.0, "msl/translational_friction.json": 1.1}
SHUFFLES = 3


def load(name: str) -> dict:
    d = orjson.loads((FIXTURES / name).read_bytes())["diagram"]
    if name in DURATION:
        d["duration"] = DURATION[name]
    return d


def sections(result_text, *, sort: bool) -> dict:
    """JSON text of each recorded section. ``sort``: object keys sorted (their order follows
    the blocks' order in the diagram, which a shuffle changes; the values must not)."""
    res = orjson.loads(result_text)
    option = orjson.OPT_SORT_KEYS if sort else 0
    return {key: orjson.dumps(res[key], option=option) for key in ("time", "workspace", "scopes", "events")}


def run(d: dict, *, sort: bool = False) -> dict:
    return sections(nc.simulate_json(orjson.dumps(d)), sort=sort)


def shuffled(d: dict, seed: int) -> dict:
    """The same diagram written in another order: blocks and connections permuted, each
    physical connection written the other way round with probability 1/2."""
    rng = random.Random(seed)
    out = orjson.loads(orjson.dumps(d))
    rng.shuffle(out["blocks"])
    conns = out["connections"]
    rng.shuffle(conns)
    for i, c in enumerate(conns):
        if "fromPin" in c and rng.random() < 0.5:
            conns[i] = dict(c, **{"from": c["to"], "to": c["from"], "fromPin": c["toPin"], "toPin": c["fromPin"]})
    return out


def _has_physical(d: dict) -> bool:
    return any("fromPin" in c for c in d["connections"])


def test_the_set_covers_msl_mechanics_and_causal_diagrams():
    assert {"msl/coupled_clutches.json", "msl/translational_friction.json"} <= set(NAMES)
    assert sum(n.split("/")[0] in MECHANICS for n in NAMES) >= 8
    assert all((FIXTURES / n).is_file() for n in NAMES)
    # the shortened MSL runs still have their stick-slip events
    assert len(orjson.loads(run(load("msl/coupled_clutches.json"))["events"])) >= 5
    assert len(orjson.loads(run(load("msl/translational_friction.json"))["events"])) >= 8


@pytest.mark.parametrize("name", NAMES)
def test_run_after_run_is_byte_identical(name):
    d = load(name)
    first = run(d)
    assert orjson.loads(first["time"]), "no samples recorded"
    for _ in range(2):
        assert run(d) == first
    plan = nc.compile_plan(d)            # one plan, run twice: init resets every state
    for _ in range(2):
        again = sections(results.encode(plan.run()), sort=False)
        assert again == first


@pytest.mark.parametrize("name", NAMES)
def test_independent_of_block_and_connection_order(name):
    d = load(name)
    base = run(d, sort=True)
    for seed in range(SHUFFLES):
        other = shuffled(d, seed)
        assert [b["id"] for b in other["blocks"]] != [b["id"] for b in d["blocks"]] or len(d["blocks"]) < 3
        got = run(other, sort=True)
        for key in base:
            assert got[key] == base[key], f"{key} differs with the JSON order of seed {seed}"


@pytest.mark.parametrize("name", [n for n in NAMES if _has_physical(load(n))])
def test_physical_connections_are_undirected(name):
    d = load(name)
    base = run(d, sort=True)
    flipped = orjson.loads(orjson.dumps(d))
    flipped["connections"] = [dict(c, **{"from": c["to"], "to": c["from"], "fromPin": c["toPin"],
                                         "toPin": c["fromPin"]}) if "fromPin" in c else c
                              for c in flipped["connections"]]
    assert run(flipped, sort=True) == base


@pytest.mark.parametrize("name", ["msl/coupled_clutches.json", "msl/translational_friction.json",
                                  "acausal_translational/brake_stops_mass.json", "nonlinear/hysteresis_triangle.json"])
def test_independent_of_the_interpreter_hash_seed(name):
    """Set and dict-of-str iteration order changes with PYTHONHASHSEED; results must not."""
    d = load(name)
    base = run(d, sort=True)
    for seed in ("1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-m", "nflow_compat"], input=orjson.dumps(shuffled(d, int(seed))),
                             capture_output=True, env=env, timeout=120, cwd=Path(__file__).resolve().parents[2])
        assert out.returncode == 0, out.stderr.decode()[-2000:]
        assert sections(out.stdout, sort=True) == base, f"differs under PYTHONHASHSEED={seed}"
