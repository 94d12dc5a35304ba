"""How to install an optional extra, said for the way this copy of the package was installed.

A feature whose dependency is missing (plotting, FMUs, sweeps) raises a typed error whose
message ends with ``install_hint(extra)``: the pip command that works from where the user
stands, because ``pip install 'nflow-compat[plot]'`` only works once the package is on an
index. Where this copy came from is read from what pip leaves behind:

* a checkout (the package folder sits beside a ``pyproject.toml`` naming nflow-compat: an
  editable install, or the source on ``sys.path``): ``pip install -e '<checkout>[plot]'``;
* a wheel or a folder installed by path (PEP 610's ``direct_url.json`` in the installed
  ``.dist-info`` names it): ``pip install '<that path>[plot]'``;
* otherwise (an index): ``pip install 'nflow-compat[plot]'``.

The command runs the interpreter that raised the error (``<python> -m pip``), so it installs
into the environment that needs the package even when another ``pip`` is first on the PATH;
paths under the current directory are written relative to it. The extra's own requirements
(from the installed metadata) follow as the alternative that needs no copy of the package.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shlex
import shutil
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

DISTRIBUTION = "nflow-compat"
PACKAGE_DIR = Path(__file__).resolve().parent
_NAME_LINE = re.compile(r'^name\s*=\s*"nflow-compat"\s*$', re.MULTILINE)
_EXTRA_MARKER = re.compile(r"""^(?P<requirement>[^;]+);\s*extra\s*==\s*["'](?P<extra>[^"']+)["']\s*$""")


def install_hint(extra: str) -> str:
    """``"install it with: <command>"`` for the extra ``extra``, then its requirements.

    Parameters
    ----------
    extra : str
        The name of an extra of ``pyproject.toml`` (``plot``, ``fmi``, ``sweep``, ...).

    Returns
    -------
    str
        One sentence, e.g. ``install it with: .venv/bin/python -m pip install -e '.[plot]'
        (or only what it needs: .venv/bin/python -m pip install 'matplotlib>=3.6')``.
    """
    python = _shown(sys.executable) if sys.executable else "python"
    if python != "python" and _same_file(shutil.which("python"), sys.executable):
        python = "python"
    source, editable = install_source()
    flag = "-e " if editable else ""
    target = f"{source}[{extra}]" if source else f"{DISTRIBUTION}[{extra}]"
    hint = f"install it with: {python} -m pip install {flag}{shlex.quote(target)}"
    needs = extra_requirements(extra)
    if needs:
        hint += f" (or only what it needs: {python} -m pip install {' '.join(shlex.quote(r) for r in needs)})"
    return hint


def install_source() -> tuple[str | None, bool]:
    """Where this copy was installed from: ``(path, editable)``, the path as the user would
    type it; ``(None, False)`` for an index (or when it cannot be told)."""
    root = PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and _NAME_LINE.search(pyproject.read_text(encoding="utf-8", errors="replace")):
        return _shown(str(root)), True
    origin = _direct_url()
    if origin is None or urlparse(origin.get("url", "")).scheme != "file":
        return None, False
    path = unquote(urlparse(origin["url"]).path)
    if not os.path.exists(path):
        return None, False
    return _shown(path), bool(origin.get("dir_info", {}).get("editable"))


def extra_requirements(extra: str) -> list[str]:
    """The requirements the installed metadata lists for ``extra`` (markers dropped); an
    extra made of other extras of this package is expanded into theirs."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    by_extra: dict = {}
    for line in requires:
        match = _EXTRA_MARKER.match(line)
        if match:
            by_extra.setdefault(match["extra"], []).append(match["requirement"].strip())
    out: list = []

    def add(name: str, seen: frozenset) -> None:
        for requirement in by_extra.get(name, []):
            own = re.match(rf"^{re.escape(DISTRIBUTION)}\s*\[(?P<extras>[^\]]*)\]", requirement)
            if own:
                for inner in own["extras"].split(","):
                    if inner.strip() not in seen:
                        add(inner.strip(), seen | {inner.strip()})
            elif requirement not in out:
                out.append(requirement)

    add(extra, frozenset({extra}))
    return out


def _direct_url() -> dict | None:
    """PEP 610's record of the installed ``.dist-info`` beside this package, if any."""
    for info in sorted(PACKAGE_DIR.parent.glob("nflow_compat-*.dist-info")):
        try:
            return json.loads((info / "direct_url.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
    return None


def _shown(path: str) -> str:
    """``path`` relative to the current directory when it lies under it, else absolute."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(Path.cwd())
    except (ValueError, OSError):
        return str(absolute)
    text = relative.as_posix()
    return text if text == "." or "/" in text else f"./{text}"     # pip reads 'x[plot]' as a name


def _same_file(a: str | None, b: str) -> bool:
    """The same path once made absolute (symlinks kept: two venvs' pythons are links to one file)."""
    return a is not None and os.path.abspath(a) == os.path.abspath(b)
