"""The documentation site builds as ``make site`` builds it, with warnings as errors (a broken
link, anchor, nav entry or snippet fails it), and holds what it promises: the API pages show
the docstrings, the block reference has a page per library, and the gallery a page per
example with the plots the build drew by running it."""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import nflow_compat as nc
from nflow_compat.engine import Plan

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PNG = b"\x89PNG\r\n\x1a\n"


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(config),
                           "--site-dir", str(site)], capture_output=True, text=True, env=env, timeout=600,
                          cwd=config.parent, stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    built = mkdocs_build(ROOT / "mkdocs.yml", out)
    assert built.returncode == 0, built.stdout + built.stderr
    assert "WARNING" not in built.stderr, built.stderr
    return out


def text(site: Path, page: str) -> str:
    return (site / page / "index.html").read_text() if not page.endswith(".html") else (site / page).read_text()


def words(html: str) -> str:
    """The text of a page as a reader sees it: tags (code highlighting's spans) gone, one line."""
    return " ".join(re.sub(r"<[^>]+>", "", html).split())


def test_the_api_pages_show_the_docstrings(site):
    api = text(site, "reference/api")
    for obj in [getattr(nc, name) for name in nc.__all__] + [Plan.run]:
        first_line = obj.__doc__.strip().splitlines()[0]
        first = re.sub(r"``([^`]*)``", r"\1", first_line).split()[:6]     # as rendered: code marks gone
        assert " ".join(first) in words(api), obj.__qualname__
    assert "Examples" in api and "&gt;&gt;&gt;" in api


def test_every_library_has_its_block_reference_page(site):
    libraries = sorted(p.parent.name for p in (ROOT / "nflow_compat" / "libraries").glob("*/library.json"))
    index = text(site, "blocks")
    for library in libraries:
        assert (site / "blocks" / library / "index.html").is_file(), library
        assert f'href="{library}/"' in index, library


def test_the_gallery_shows_every_example_with_its_plot(site):
    examples = sorted(p.parent.name for p in (ROOT / "examples").glob("*/diagram.json"))
    gallery = text(site, "gallery")
    for name in examples:
        page = text(site, f"gallery/{name}")
        assert (site / "gallery" / f"{name}.png").read_bytes().startswith(PNG), name
        assert f'src="../{name}.png"' in page and f"nflow-sim plot " in words(page), name
        assert f'href="{name}/"' in gallery, name
    # the images the examples' own scripts draw
    assert (site / "gallery" / "four_bar-four_bar.png").read_bytes().startswith(PNG)
    assert (site / "gallery" / "sweep_coulomb-breakaway.png").read_bytes().startswith(PNG)
    assert "status ok: 401 samples" in words(text(site, "gallery/quickstart"))    # summary.py's output


def test_the_navigation_lists_the_pages_of_each_folder_section(site):
    home = text(site, "index.html")
    for page in ("gallery/dc_motor/", "blocks/acausal_planar/", "guide/sweeps/", "reference/api/", "CONTRACT/",
                 "ARCHITECTURE/", "changelog/"):
        assert f'href="{page}"' in home, page


def test_the_changelog_and_the_contract_are_in_the_site(site):
    assert "Keep a Changelog" in text(site, "changelog")
    assert "The contract" in text(site, "CONTRACT")


def _load_gallery_hook(monkeypatch):
    """docs/hooks/gallery.py as mkdocs loads it (its folder on sys.path, for ``import commands``)."""
    monkeypatch.syspath_prepend(str(DOCS / "hooks"))
    spec = importlib.util.spec_from_file_location("gallery_hook_under_test", DOCS / "hooks" / "gallery.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_a_failing_example_command_fails_the_gallery(tmp_path, monkeypatch):
    gallery = _load_gallery_hook(monkeypatch)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "diagram.json").write_text("{}")
    (tmp_path / "broken" / "README.md").write_text("# Broken\n\n```\nnflow-sim run examples/broken/none.json\n```\n")
    monkeypatch.setattr(gallery, "EXAMPLES", tmp_path)
    with pytest.raises(RuntimeError, match="nflow-sim run examples/broken/none.json"):
        gallery.run_example("broken", tmp_path / "scratch")


@pytest.mark.parametrize("broken", ["[a link](missing.md)", "[an anchor](#nowhere)", "[a folder](sub/)"])
def test_the_sites_validation_turns_broken_links_into_errors(tmp_path, broken):
    """The checks mkdocs.yml sets, on a one-page site: each broken reference fails the build."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    small = {key: config[key] for key in ("strict", "validation", "markdown_extensions")}
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text(f"# Home\n\nText with {broken}.\n")
    (tmp_path / "mkdocs.yml").write_text(yaml.safe_dump({"site_name": "t", **small}))
    assert small["strict"] is True
    built = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert built.returncode != 0 and "WARNING" in built.stderr, built.stderr
    (tmp_path / "docs" / "index.md").write_text("# Home\n\nNo broken link.\n")
    assert mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site").returncode == 0
