"""The checked-in JSON Schema files, generated from the library manifests (``shape``) and
the sweep spec (``sweeps.schema``).

``python -m nflow_compat.schema --write schemas`` regenerates them
(``schemas/diagram.schema.json``, ``schemas/blocks/<type>.params.schema.json``, and
``schemas/sweep.schema.json``); ``--check schemas`` exits 1 and lists the files that are stale.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from .manifests import block_types
from .shape import DIAGRAM_FILE, diagram_schema, params_file, params_schema_for
from .sweeps.schema import sweep_schema

SWEEP_FILE = "sweep.schema.json"
BLOCKS_DIR = "blocks"


def _dump(doc: dict) -> bytes:
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"


def generate() -> dict:
    """Relative path (posix) -> file content, for every checked-in schema file."""
    files = {DIAGRAM_FILE: _dump(diagram_schema()), SWEEP_FILE: _dump(sweep_schema())}
    for name in block_types():
        files[f"{BLOCKS_DIR}/{params_file(name)}"] = _dump(params_schema_for(name))
    return files


def _on_disk(root: Path) -> set:
    found = set()
    found |= {name for name in (DIAGRAM_FILE, SWEEP_FILE) if (root / name).is_file()}
    if (root / BLOCKS_DIR).is_dir():
        found |= {f"{BLOCKS_DIR}/{p.name}" for p in (root / BLOCKS_DIR).glob("*.schema.json")}
    return found


def stale(root: Path) -> list:
    """Messages for every file under ``root`` that differs from what generation gives."""
    files = generate()
    out = []
    for rel, content in files.items():
        path = root / rel
        if not path.is_file():
            out.append(f"missing: {rel}")
        elif path.read_bytes() != content:
            out.append(f"stale: {rel}")
    out += [f"extra: {rel}" for rel in sorted(_on_disk(root) - set(files))]
    return out


def write(root: Path) -> int:
    """Write every schema file under ``root``, remove ones for types that are gone."""
    files = generate()
    (root / BLOCKS_DIR).mkdir(parents=True, exist_ok=True)
    changed = 0
    for rel, content in files.items():
        path = root / rel
        if not path.is_file() or path.read_bytes() != content:
            path.write_bytes(content)
            changed += 1
    for rel in _on_disk(root) - set(files):
        (root / rel).unlink()
        changed += 1
    return changed


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m nflow_compat.schema",
                                description="Generate or check the JSON Schemas of the manifests.")
    group = p.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", metavar="DIR", help="write the schemas under DIR")
    group.add_argument("--check", metavar="DIR", help="exit 1 if the schemas under DIR are stale")
    args = p.parse_args(argv)
    if args.write:
        changed = write(Path(args.write))
        print(f"{args.write}: {changed} file(s) written or removed, {len(generate())} in all")
        return 0
    problems = stale(Path(args.check))
    for line in problems:
        print(line)
    if problems:
        print(f"{len(problems)} schema file(s) out of date; run: python -m nflow_compat.schema "
              f"--write {args.check}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
