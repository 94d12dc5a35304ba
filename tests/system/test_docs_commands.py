"""The README's and the site's claims, checked: every command the README, Getting started and
Installation show runs here as the reader would type it (in a copy of the checkout, the
commands of a page one after the other), so a renamed option, target or moved file breaks the
suite instead of the reader. The Python blocks of those pages run as scripts, the files they
show (a fence with ``title="first.json"``) are written first, every ``nflow-sim`` option any
page names exists, and the README's links lead to files.

What cannot run inside the suite runs as close to it as it can, and only that is changed:
``make test`` is the suite itself (``make -n``: the target exists and runs pytest), ``make
site`` is ``tests/system/test_site.py``'s build (``make -n``), ``make demo`` runs with this
environment as its ``.venv`` and without reinstalling it, ``pip install`` resolves for real
but installs nothing (``--dry-run --no-index``: every requirement, extras included, must be
met by this environment, which the ``test`` extra made), and ``python -m build`` builds
without an isolated environment (``--no-isolation``: no download).
"""
from __future__ import annotations

import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from nflow_compat import cli

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", "docs/getting-started.md", "docs/guide/install.md"]
OPTION_PAGES = PAGES + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("**/*.md")
                              if "blocks" not in p.parts and str(p.relative_to(ROOT)) not in PAGES)
CHECKOUT = ["pyproject.toml", "README.md", "LICENSE", "COPYING", "CHANGELOG.md", "Makefile", "nflow_compat",
            "examples"]


def _commands_module():
    spec = importlib.util.spec_from_file_location("docs_commands", ROOT / "docs" / "hooks" / "commands.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name]


commands = _commands_module()


def checkout_copy(where: Path) -> Path:
    where.mkdir()
    for name in CHECKOUT:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, where / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(source, where / name)
    return where


def prepared(page: str, tmp_path: Path) -> tuple[Path, str]:
    """A copy of the checkout holding the files ``page`` shows (its titled fences), and the page."""
    work = checkout_copy(tmp_path / "checkout")
    markdown = (ROOT / page).read_text()
    for fence in commands.fences(markdown):
        if fence.title:
            (work / fence.title).write_text(fence.body + "\n")
    return work, markdown


def as_run(command: str) -> str:
    """The command as this test runs it (see the module docstring for each change)."""
    words = shlex.split(command)
    if words[:2] == ["make", "demo"]:
        return f"make -o {sys.prefix}/.installed demo VENV={sys.prefix}"
    if words[0] == "make" and words[1] in ("test", "site"):
        return f"make -n {words[1]}"
    if words[:4] == ["python", "-m", "pip", "install"]:
        local = "-e" in words or any(w.startswith((".", "/")) and not w.endswith("]") or w.startswith(".[")
                                     for w in words[4:])
        return command + " --dry-run --no-index" + (" --no-build-isolation" if local else "")
    if words[:3] == ["python", "-m", "build"]:
        return command + " --no-isolation"
    return command


EXPECTED_OUTPUT = {"make -n test": "-m pytest", "make -n site": "mkdocs build --strict"}


def test_each_page_shows_commands():
    for page in PAGES:
        assert commands.commands((ROOT / page).read_text()), page
    readme = commands.commands((ROOT / "README.md").read_text())
    assert readme[:2] == ["make demo", "make test"]           # the README opens with the two commands


@pytest.mark.parametrize("page", PAGES)
def test_every_command_of_the_page_runs(page, tmp_path):
    work, markdown = prepared(page, tmp_path)
    for command in commands.commands(markdown):
        line = as_run(command)
        done = commands.run(line, work)
        assert done.returncode == 0, f"{page}: `{command}` (run as `{line}`): {done.stdout[-3000:]}{done.stderr[-3000:]}"
        if line in EXPECTED_OUTPUT:
            assert EXPECTED_OUTPUT[line] in done.stdout, f"{page}: `{command}`: {done.stdout}"


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_of_the_page_runs(page, tmp_path):
    work, markdown = prepared(page, tmp_path)
    blocks = [fence.body for fence in commands.fences(markdown) if fence.language == "python"]
    for code in blocks:
        done = subprocess.run([sys.executable, "-c", code], cwd=work, capture_output=True, text=True, timeout=300,
                              env=commands.environment(), stdin=subprocess.DEVNULL)
        assert done.returncode == 0, f"{page}:\n{code}\n{done.stderr[-3000:]}"


def _options() -> dict:
    """nflow-sim's subcommands -> their option strings (the top level's under '')."""
    parser = cli._parser()
    (subparsers,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    found = {"": set(parser._option_string_actions)}
    for name, sub in subparsers.choices.items():
        found[name] = set(sub._option_string_actions)
    return found


@pytest.mark.parametrize("page", OPTION_PAGES)
def test_every_nflow_sim_option_a_page_names_exists(page):
    options = _options()
    for line in (ROOT / page).read_text().splitlines():
        for match in re.finditer(r"(?<![\w-])nflow-sim(?![\w-])(?: (?P<sub>[a-z][a-z-]*))?(?P<rest>[^`\n]*)", line):
            sub = match["sub"] if match["sub"] in options else ""
            rest = match["rest"].split(" #")[0]
            for option in re.findall(r"(?<![\w-])(--?[a-z][a-z0-9-]*)", rest):
                assert option in options[sub], f"{page}: nflow-sim {sub} {option}"


def test_the_readmes_links_lead_to_files():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", readme)
    assert targets
    for target in targets:
        if not re.match(r"\w+://", target):
            assert (ROOT / target).exists(), target
