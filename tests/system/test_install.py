"""The package as it installs: every feature's extra is in ``all`` (and ``test`` brings
``all``: tests never skip), the version is written once, and the wheel that the README's
``python -m build`` makes carries the license texts, ``py.typed`` and the manifests, with no
deprecation warning from the build backend."""
from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import nflow_compat as nc

DISTRIBUTION = "nflow-compat"
ROOT = Path(__file__).resolve().parents[2]
NOT_FEATURES = {"all", "test", "bench"}      # `all` itself, and the developers' extras


def own_extras(requirement_marker: str) -> set:
    """The extras of this package that the extra ``requirement_marker`` names."""
    found = set()
    for line in importlib.metadata.requires(DISTRIBUTION) or []:
        match = re.match(rf'^{DISTRIBUTION}\[([^\]]*)\].*extra == "{requirement_marker}"', line)
        if match:
            found.update(e.strip() for e in match[1].split(","))
    return found


def test_all_names_every_feature_extra():
    extras = set(importlib.metadata.metadata(DISTRIBUTION).get_all("Provides-Extra"))
    assert {"plot", "fmi", "sweep", "docs"} <= extras
    assert own_extras("all") == extras - NOT_FEATURES


def test_the_test_extra_brings_every_feature():
    assert own_extras("test") == {"all"}


def test_the_version_is_written_once():
    written = re.findall(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert written == [importlib.metadata.version(DISTRIBUTION)] == [nc.__version__]
    assert "__version__ =" not in (ROOT / "nflow_compat" / "__init__.py").read_text()


def test_the_wheel_builds_clean_and_carries_what_the_package_needs(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "COPYING"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "nflow_compat", source / "nflow_compat", ignore=shutil.ignore_patterns("__pycache__"))
    built = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                            str(tmp_path / "dist"), str(source)], capture_output=True, text=True, timeout=300)
    log = built.stdout + built.stderr
    assert built.returncode == 0, log
    assert not re.search(r"deprecat", log, re.IGNORECASE), log
    (wheel,) = (tmp_path / "dist").glob("nflow_compat-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(f"{info}/METADATA").decode()
    assert "nflow_compat/py.typed" in names
    manifests = {n for n in names if re.fullmatch(r"nflow_compat/libraries/\w+/library\.json", n)}
    assert len(manifests) == len(list((ROOT / "nflow_compat" / "libraries").glob("*/library.json"))) == 17
    assert {f"{info}/licenses/LICENSE", f"{info}/licenses/COPYING"} <= names
    assert not any(n.startswith(("tests/", "bench/", "examples/")) for n in names)
    assert "License-Expression: LGPL-3.0-or-later" in metadata
    assert not re.search(r"^License:", metadata, re.MULTILINE)
    assert "Classifier: Typing :: Typed" in metadata and "Project-URL: " in metadata
    assert "GNU LESSER GENERAL PUBLIC LICENSE" in (ROOT / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in (ROOT / "COPYING").read_text()
