"""The file sandbox: every file a diagram reads or writes (fileSource, fileSink, an FMU) is
named relative to the run's base directory and must stay inside it; CSV sample files are read
and written here, shared by the blocks that need them and the plan that preloads them."""
from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

import numpy as np

from .errors import DiagramError

BASE_DIR_KEY = "base_dir"          # ctx.shared entry set by the plan (None: no file access)


def confined_path(base_dir, name, where: dict, *, what: str = "file"):
    """The resolved path of ``name`` inside ``base_dir``; a DiagramError ``path_outside_base``
    for an absolute path, a '..' that climbs out, or a symlink that leads out of the base."""
    if not isinstance(name, str) or not name.strip() or "\x00" in name:
        raise DiagramError("bad_file_name", f"the {what} name must be a non-empty text without NUL characters",
                           **where)
    try:
        base = Path(base_dir).resolve(strict=True)
    except (OSError, RuntimeError, TypeError, ValueError):
        raise DiagramError("bad_base_dir", f"the base directory {str(base_dir)!r} does not exist", **where) from None
    if not base.is_dir():
        raise DiagramError("bad_base_dir", f"the base directory {str(base_dir)!r} is not a directory", **where)
    rel = Path(name)
    if rel.is_absolute() or rel.drive or rel.anchor:
        raise DiagramError("path_outside_base", f"{what} {name!r} is an absolute path; paths are relative to the "
                           "base directory (the diagram's directory, or --base-dir / base_dir=)", **where)
    try:
        target = (base / rel).resolve(strict=False)   # follows every symlink that exists
    except (OSError, RuntimeError, ValueError):
        raise DiagramError("bad_file_name", f"{what} {name!r} cannot be resolved (a symlink loop?)", **where) \
            from None
    if target == base or base not in target.parents:
        raise DiagramError("path_outside_base", f"{what} {name!r} leads outside the base directory "
                           "(a '..' or a symlink pointing out of it)", **where)
    return target


def _csv_cells(line: str) -> list:
    return [c.strip() for c in line.split(",")] if "," in line else line.split()


def _csv_number(cell: str) -> float:
    if "_" in cell:   # Python's float() takes '1_000'; a CSV number does not
        raise ValueError(cell)
    return float(cell)


def read_samples_csv(path, name: str, max_bytes: int, max_width: int, where: dict):
    """(times (n), values (n x w)) from a CSV file: one row per sample, time in the first
    column and the w signal elements after it, separated by commas (or blanks when a line
    has no comma). Blank lines and lines starting with '#' are skipped; so is a first line
    that is not numeric (a header such as fileSink's 't,<id>'). Numbers are what C's strtod
    reads ('1e-3', 'inf', 'nan'); times must be finite and non-decreasing."""
    try:
        # non-blocking open and a check on the opened file: a FIFO or a device never hangs the run
        fd = os.open(path, os.O_RDONLY | (os.O_NONBLOCK if hasattr(os, "O_NONBLOCK") else 0))
        with os.fdopen(fd, "rb") as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise DiagramError("file_unreadable", f"file {name!r} is not a regular file", **where)
            if info.st_size > max_bytes:
                raise DiagramError("file_too_large", f"file {name!r} has {info.st_size} bytes (limit {max_bytes})",
                                   **where)
            raw = fh.read(max_bytes + 1)
    except OSError as exc:
        raise DiagramError("file_unreadable", f"cannot read file {name!r}: {exc.strerror or exc}", **where) from None
    if len(raw) > max_bytes:
        raise DiagramError("file_too_large", f"file {name!r} has more than {max_bytes} bytes", **where)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DiagramError("filesource_bad_csv", f"file {name!r} is not UTF-8 text", **where) from None
    rows, ncols, header_allowed = [], 0, True
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        cells = _csv_cells(line)
        try:
            row = [_csv_number(c) for c in cells]
        except ValueError:
            if header_allowed:
                header_allowed = False
                continue
            bad = next(c for c in cells if not _is_number(c))
            raise DiagramError("filesource_bad_csv", f"file {name!r}, line {lineno}: {bad[:40]!r} is not a number",
                               **where) from None
        header_allowed = False
        if not ncols:
            ncols = len(row)
            if ncols < 2:
                raise DiagramError("filesource_bad_csv", f"file {name!r}, line {lineno}: a row needs a time and at "
                                   "least one value", **where)
            if ncols - 1 > max_width:
                raise DiagramError("too_wide", f"file {name!r} has {ncols - 1} value columns (limit {max_width})",
                                   **where)
        elif len(row) != ncols:
            raise DiagramError("filesource_bad_csv", f"file {name!r}, line {lineno}: {len(row)} columns where the "
                               f"first row has {ncols}", **where)
        rows.append(row)
    if not rows:
        return np.zeros(0), np.zeros((0, 1))
    table = np.array(rows, dtype=float)
    return table[:, 0].copy(), table[:, 1:].copy()


def _is_number(cell: str) -> bool:
    try:
        _csv_number(cell)
    except ValueError:
        return False
    return True


def confined_base(base):
    return Path(base).resolve(strict=True)


def _csv_field(text: str) -> str:
    """A header cell: as is, or double-quoted (quotes doubled) when it holds a comma, a
    quote or a line break, so the file stays one row per line."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_lines(times: np.ndarray, values: np.ndarray):
    """The data rows, '%.15g' as nflow's fprintf, a block of rows at a time."""
    number = "%.15g".__mod__
    step = 8192
    for start in range(0, len(times), step):
        block = values[start:start + step]
        cols = [map(number, times[start:start + step].tolist())] + [map(number, block[:, j].tolist())
                                                                   for j in range(block.shape[1])]
        yield "\n".join(map(",".join, zip(*cols))) + "\n"


def write_csv(path, columns: list, times: np.ndarray, values: np.ndarray) -> None:
    """The whole file: written to a temporary file next to ``path``, then renamed over it
    (an atomic replace), so ``path`` is either the old file or the complete new one."""
    tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
    # O_EXCL: never reuse or follow an existing entry; mode 0666 less the umask, like fopen
    nofollow = os.O_NOFOLLOW if hasattr(os, "O_NOFOLLOW") else 0
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | nofollow, 0o666)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(",".join(_csv_field(c) for c in columns) + "\n")
            for chunk in csv_lines(times, values):
                fh.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
