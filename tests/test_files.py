"""The file sandbox (``nflow_compat.files``): every file a diagram reads or writes stays
inside the base directory; escapes by ``..``, an absolute path or a symlink are refused
(fileSource's reads, fileSink's writes), and nothing is written when they are."""
import os

import pytest

import nflow_compat as nc
from tests.csv_files import error, played, sink_diagram
from tests.util import blk


@pytest.fixture
def jail(tmp_path):
    """base/ (allowed) and outside/secret.csv next to it."""
    base, outside = tmp_path / "base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "secret.csv").write_text("0,42\n")
    (base / "ok.csv").write_text("0,1\n")
    return base, outside


@pytest.mark.parametrize("name", ["../outside/secret.csv", "sub/../../outside/secret.csv", "..", ".",
                                  "ABSOLUTE"])
def test_escapes_are_refused(jail, name):
    base, outside = jail
    (base / "sub").mkdir(exist_ok=True)
    if name == "ABSOLUTE":
        name = str(outside / "secret.csv")
    err = error(lambda: played({"FileName": name}, base_dir=base))
    assert isinstance(err, nc.DiagramError) and err.code == "path_outside_base"
    assert err.block == "src" and err.path == "/blocks/0/params/FileName"


def test_symlink_out_of_the_base_is_refused(jail):
    base, outside = jail
    os.symlink(outside / "secret.csv", base / "link.csv")
    os.symlink(outside, base / "linkdir")
    for name in ("link.csv", "linkdir/secret.csv"):
        err = error(lambda: played({"FileName": name}, base_dir=base))
        assert err.code == "path_outside_base"


def test_symlink_inside_the_base_and_inner_dotdot_are_fine(jail):
    base, _ = jail
    (base / "sub").mkdir()
    os.symlink(base / "ok.csv", base / "sub" / "alias.csv")
    for name in ("sub/alias.csv", "sub/../ok.csv", "./ok.csv"):
        y, _ = played({"FileName": name}, base_dir=base, duration=0.1)
        assert y[:, 0].tolist() == [1, 1]


def test_a_symlinked_base_directory_is_its_target(jail, tmp_path):
    base, _ = jail
    os.symlink(base, tmp_path / "alias")
    y, _ = played({"FileName": "ok.csv"}, base_dir=tmp_path / "alias", duration=0.1)
    assert y[:, 0].tolist() == [1, 1]


def test_missing_base_directory(tmp_path):
    err = error(lambda: played({"FileName": "x.csv"}, base_dir=tmp_path / "nope"))
    assert err.code == "bad_base_dir"


@pytest.mark.parametrize("name", ["../escape.csv", "ABSOLUTE", "linkdir/x.csv", "link.csv"])
def test_sink_escapes_are_refused_and_nothing_is_written(jail, name):
    base, outside = jail
    os.symlink(outside, base / "linkdir")
    os.symlink(outside / "secret.csv", base / "link.csv")
    if name == "ABSOLUTE":
        name = str(outside / "x.csv")
    err = error(lambda: nc.simulate(sink_diagram(blk("s", "constant", Value=1), name), base_dir=base))
    assert err.code == "path_outside_base" and err.block == "fs"
    assert sorted(p.name for p in outside.iterdir()) == ["secret.csv"]
    assert (outside / "secret.csv").read_text() == "0,42\n"
    assert not (base.parent / "escape.csv").exists()
