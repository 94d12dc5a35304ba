"""Fuzzing (docs/CONTRACT.md §5): whatever the input, ``simulate_json`` returns a valid ok result on the
CONTRACT §3 time grid or raises an NFlowError with a code and a message; never another exception,
never a hang (each case runs with small ``Limits`` - 2000 samples, 10k solver steps - and a 5 s
wall-clock budget).

Strategies live in ``tests/fuzz.py``. By default (``make test``) a small seeded slice runs
(derandomized: the same few hundred cases every time). ``make fuzz`` sets
``NFLOW_FUZZ_EXAMPLES`` (the total number of cases, split over the three property tests)
and runs random, fresh cases.

A crash does not stop the campaign: each distinct crash (exception type + innermost package
frame) is collected with the smallest input that showed it, every case still runs, and
``test_no_crashes_found`` fails at the end listing them (reproducers are written under
``NFLOW_FUZZ_FINDINGS``, default ``$TMPDIR/nflow-fuzz-findings``). ``NFLOW_FUZZ_SHRINK=1``
instead fails at the first crash and lets Hypothesis shrink it to a minimal example. Each
crash found gets a minimal reproducer in ``tests/system/test_fuzz_findings.py``.
"""
from __future__ import annotations

import os
import re
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings

from tests import fuzz

TOTAL = int(os.environ.get("NFLOW_FUZZ_EXAMPLES", "0") or 0)
FULL = TOTAL > 0
SHRINK = os.environ.get("NFLOW_FUZZ_SHRINK", "") not in ("", "0")
FINDINGS_DIR = Path(os.environ.get("NFLOW_FUZZ_FINDINGS") or Path(tempfile.gettempdir()) / "nflow-fuzz-findings")
# share of the cases per test; the CI slice runs these counts, derandomized
SHARES = {"generated": 0.45, "mutated": 0.45, "text": 0.10}
CI_SLICE = {"generated": 300, "mutated": 200, "text": 50}


def _settings(name: str):
    n = max(1, round(TOTAL * SHARES[name]) + 1) if FULL else CI_SLICE[name]
    return settings(
        max_examples=n,
        deadline=None,                        # the per-case wall-clock budget is fuzz.check_case's
        derandomize=not FULL,
        database=settings.default.database if FULL else None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example,
                               HealthCheck.filter_too_much],
        print_blob=True,
    )


OUTCOMES = {name: Counter() for name in SHARES}
CRASHES: dict = {}   # signature -> {"count", "text", "trace", "test"}


def _case(name: str, text):
    try:
        outcome = fuzz.check_case(text)
    except (Exception, fuzz.CaseTimeout) as exc:
        if SHRINK:
            raise
        sig = fuzz.signature(exc)
        seen = CRASHES.setdefault(sig, {"count": 0, "text": None, "trace": "", "test": name})
        seen["count"] += 1
        if seen["text"] is None or len(text) < len(seen["text"]):
            seen["text"] = text
            seen["trace"] = "".join(traceback.format_exception(exc, limit=-6))
        outcome = "CRASH"
    OUTCOMES[name][outcome] += 1
    event(f"outcome: {outcome}")


@_settings("generated")
@given(fuzz.encoded(fuzz.generated_diagrams()))
def test_generated_diagrams_simulate_or_fail_cleanly(text):
    _case("generated", text)


@_settings("mutated")
@given(fuzz.encoded(fuzz.mutated_fixtures()))
def test_mutated_fixtures_simulate_or_fail_cleanly(text):
    _case("mutated", text)


@_settings("text")
@given(fuzz.mangled_texts())
def test_mangled_json_text_fails_cleanly(text):
    _case("text", text)


def _campaign() -> None:
    """The outcomes the summaries below read: each fuzz test that has not run in this
    session (``pytest -k``, a summary test run alone) runs here, with the same settings."""
    for name, test in (("generated", test_generated_diagrams_simulate_or_fail_cleanly),
                       ("mutated", test_mutated_fixtures_simulate_or_fail_cleanly),
                       ("text", test_mangled_json_text_fails_cleanly)):
        if not OUTCOMES[name]:
            test()


def test_the_fuzzers_reach_the_simulator():
    """The strategies are worth their run time only if a fair share of cases get past
    validation and actually run, and the rest cover many distinct errors."""
    _campaign()
    summary = []
    for name, counts in OUTCOMES.items():
        total = sum(counts.values())
        summary.append(f"{name}: {total} cases, {counts['ok']} ok, {counts['CRASH']} crashed; errors: "
                       + ", ".join(f"{code} {n}" for code, n in counts.most_common() if code not in ("ok", "CRASH")))
    sys.stdout.write("\nfuzz outcomes (" + ("NFLOW_FUZZ_EXAMPLES=%d" % TOTAL if FULL else "CI slice") + ")\n  "
                     + "\n  ".join(summary) + "\n")
    for name, share in (("generated", 0.10), ("mutated", 0.05)):   # mutated: every case has 1-4 mutations
        counts = OUTCOMES[name]
        total = sum(counts.values())
        assert counts["ok"] >= share * total, f"{name}: only {counts['ok']} of {total} cases ran"
        assert len(counts) >= 10, f"{name}: only {len(counts)} distinct outcomes: {sorted(counts)}"


def test_no_crashes_found():
    """Every distinct crash of the campaign, with its smallest input (written to a file)."""
    _campaign()
    if not CRASHES:
        return
    FINDINGS_DIR.mkdir(parents=True, exist_ok=True)
    report = []
    for i, (sig, seen) in enumerate(sorted(CRASHES.items())):
        slug = re.sub(r"[^A-Za-z0-9]+", "_", sig)[:80]
        path = FINDINGS_DIR / f"{i:02d}_{slug}.json"
        text = seen["text"]
        path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
        report.append(f"- {sig}: {seen['count']} case(s) in {seen['test']}; smallest input "
                      f"({len(text)} bytes): {path}\n{seen['trace']}")
    pytest.fail(f"{len(CRASHES)} distinct crash(es):\n" + "\n".join(report), pytrace=False)
