"""The shell commands a Markdown page shows, and how to run them as its reader would.

Two users: the site build (``gallery.py`` runs each example's commands to show their output
and the images they draw) and ``tests/system/test_docs_commands.py`` (every command of the
README and of Getting started runs, so a renamed option or a moved file breaks the suite
rather than the reader). A command is a line of a fenced block marked ``sh`` (or unmarked)
whose first word is a program a reader runs (``nflow-sim``, ``python``, ``make``, ...); other
lines of an unmarked block (an example's equations) are not commands. ``#`` starts a comment.

A command runs under ``bash`` in a given folder with the running interpreter's environment
first on ``PATH`` (so ``nflow-sim`` and ``python`` are that environment's, as after
activating it), and with the ``.venv/`` the page names read as that environment.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^\n`]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$",
                   re.MULTILINE | re.DOTALL)
SHELL = {"", "sh", "shell", "bash"}
PROGRAMS = ("nflow-sim", "python", "make", ".", ".venv/bin/")
TITLE = re.compile(r'title="([^"]+)"')


@dataclass(frozen=True)
class Fence:
    """One fenced code block: its language, its ``title="..."`` (a file name) and its text."""
    language: str
    title: str | None
    body: str


def fences(markdown: str) -> list[Fence]:
    out = []
    for match in FENCE.finditer(markdown):
        info = match["info"].strip()
        language = info.split()[0] if info and not info.startswith("title=") else ""
        title = TITLE.search(info)
        indent = len(match["indent"])
        body = "\n".join(line[indent:] for line in match["body"].splitlines())
        out.append(Fence(language, title[1] if title else None, body))
    return out


def is_command(line: str) -> bool:
    words = line.split()
    return bool(words) and (words[0] in PROGRAMS or words[0].startswith(PROGRAMS[-1]))


def commands(markdown: str) -> list[str]:
    """The command lines of ``markdown``'s shell blocks, in order, comments dropped."""
    found = []
    for fence in fences(markdown):
        if fence.language in SHELL:
            found += [line.split(" #")[0].strip() for line in fence.body.splitlines() if is_command(line)]
    return found


def environment() -> dict:
    """The environment variables a command runs with: the running interpreter's environment
    activated (its ``bin/`` first on ``PATH``)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["VIRTUAL_ENV"] = sys.prefix
    env.pop("PYTHONHOME", None)
    return env


def shell_line(command: str) -> str:
    """``command`` with the ``.venv/`` of the page meaning the running environment."""
    return re.sub(r"(?<![\w/.])\.venv/", f"{sys.prefix}/", command)


def run(command: str, cwd: Path, *, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run one command as the reader would, from ``cwd``; output captured as text."""
    return subprocess.run(["bash", "-c", shell_line(command)], cwd=cwd, env=environment(), capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL)
