"""The block reference: one Markdown page per library, generated from the manifests.

``python -m nflow_compat.docs --write docs/blocks`` writes the pages; ``--check`` exits 1
when the checked-in pages are stale (a test runs it). Each block lists its ports,
physical pins, params with defaults and kinds, what it does (the manifest help), whether
it runs here, and the golden fixtures that exercise it (runnable examples).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .blocks import NOT_RUNNABLE
from .blocks.handlers import supported_types
from .manifests import block_types, libraries

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
REFERENCE = FIXTURES / "reference"   # reference data (MSL results, nflow's examples), not diagrams


def _fixture_index() -> dict:
    """block type -> fixture paths (relative to the repository) that use it."""
    index: dict = {}
    if not FIXTURES.is_dir():
        return index
    for path in sorted(FIXTURES.rglob("*.json")):
        if REFERENCE in path.parents:
            continue
        blocks = json.loads(path.read_text())["diagram"]["blocks"]
        for b in blocks if isinstance(blocks, list) else [blocks]:
            rel = f"fixtures/{path.relative_to(FIXTURES).as_posix()}"
            index.setdefault(b["type"], [])
            if rel not in index[b["type"]]:
                index[b["type"]].append(rel)
    return index


def _default(value) -> str:
    return "–" if value is None else f"`{json.dumps(value)}`"


def library_page(folder: str, manifest: dict, runs: set, examples: dict) -> str:
    types = block_types()
    lines = [f"# {manifest['title']} (`{folder}`)", "", (manifest.get("comment") or "").strip(), "",
             f"{sum(1 for b in manifest['blocks'] if b['type'] in runs)} of {len(manifest['blocks'])} "
             "blocks run in nflow-compat.", ""]
    for entry in manifest["blocks"]:
        bt = types[entry["type"]]
        lines += [f"## `{bt.type}` — {bt.label}", "", bt.help, ""]
        why = f": {NOT_RUNNABLE[bt.type]}" if bt.type in NOT_RUNNABLE else ""
        lines.append(f"- runs here: {'yes' if bt.type in runs else f'no (validates only; `unsupported_block` when run){why}'}")
        if bt.inputs or bt.outputs:
            ins = ", ".join(n or str(i) for i, n in enumerate(bt.input_names)) or "none"
            outs = ", ".join(n or str(i) for i, n in enumerate(bt.output_names)) or "none"
            lines.append(f"- signal ports (0-based): inputs {ins}; outputs {outs}")
        if bt.pins:
            lines.append("- physical pins: " + ", ".join(f"`{p}` ({d})" for p, d in bt.pins.items()))
        if bt.aliases:
            lines.append("- also accepts: " + ", ".join(f"`{a}` for `{n}`" for a, n in bt.aliases.items()))
        if bt.params:
            lines += ["", "| param | default | kind |", "|---|---|---|"]
            for spec in bt.params.values():
                kind = spec.kind + (f", one of {list(spec.enum)}" if spec.enum else "")
                if spec.minimum is not None:
                    kind += f", >= {spec.minimum:g}"
                if spec.exclusive_minimum is not None:
                    kind += f", > {spec.exclusive_minimum:g}"
                lines.append(f"| `{spec.name}` | {_default(spec.default)} | {kind} |")
        uses = examples.get(bt.type, [])
        if uses:
            lines += ["", "Examples: " + ", ".join(f"`{u}`" for u in uses[:4])]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def pages() -> dict:
    runs = {row["type"] for row in supported_types()}
    examples = _fixture_index()
    out = {f"{folder}.md": library_page(folder, manifest, runs, examples)
           for folder, manifest in libraries().items()}
    index = ["# Block reference", "", "Generated from `nflow_compat/libraries/*/library.json` by "
             "`python -m nflow_compat.docs --write docs/blocks`.", "", "| library | blocks | run here |", "|---|---|---|"]
    for folder, manifest in libraries().items():
        n = len(manifest["blocks"])
        index.append(f"| [{manifest['title']}]({folder}.md) | {n} | "
                     f"{sum(1 for b in manifest['blocks'] if b['type'] in runs)} |")
    out["README.md"] = "\n".join(index) + "\n"
    return out


def stale(directory: Path) -> list:
    want = pages()
    have = {p.name for p in directory.glob("*.md")} if directory.is_dir() else set()
    bad = [name for name, text in want.items()
           if not (directory / name).is_file() or (directory / name).read_text() != text]
    return sorted(bad + [name for name in have - set(want)])


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 2 or argv[0] not in ("--write", "--check"):
        print("usage: python -m nflow_compat.docs --write|--check DIR", file=sys.stderr)
        return 2
    directory = Path(argv[1])
    if argv[0] == "--check":
        bad = stale(directory)
        for name in bad:
            print(f"stale: {directory / name}")
        return 1 if bad else 0
    directory.mkdir(parents=True, exist_ok=True)
    want = pages()
    for old in directory.glob("*.md"):
        if old.name not in want:
            old.unlink()
    for name, text in want.items():
        (directory / name).write_text(text)
    print(f"docs: {len(want)} page(s) in {directory}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
