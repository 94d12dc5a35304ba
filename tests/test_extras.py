"""nflow_compat/extras.py: the install hint says the command that works for how this copy was
installed (a checkout, a wheel or folder by path, an index), and the features whose
dependency is missing end their typed errors with it."""
from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

import nflow_compat as nc
from nflow_compat import extras
from nflow_compat.blocks import fmi

ROOT = Path(__file__).resolve().parents[1]


def command(hint: str) -> list:
    """The pip command of a hint, as the shell would split it."""
    first = hint.removeprefix("install it with: ").split(" (or only what it needs: ")[0]
    return shlex.split(first)


def test_from_the_checkout_it_is_an_editable_install_of_the_checkout(monkeypatch):
    monkeypatch.chdir(ROOT)
    words = command(extras.install_hint("plot"))
    assert words[1:] == ["-m", "pip", "install", "-e", ".[plot]"]
    assert Path(words[0]).resolve() == Path(sys.executable).resolve()


def test_from_elsewhere_the_checkout_is_named_by_its_absolute_path(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert command(extras.install_hint("fmi"))[-2:] == ["-e", f"{ROOT}[fmi]"]


def test_the_extras_own_requirements_are_the_alternative():
    assert "(or only what it needs: " in extras.install_hint("plot")
    assert "'matplotlib>=3.6')" in extras.install_hint("plot")
    assert extras.extra_requirements("sweep") == ["dask[diagnostics,distributed]>=2024.1", "pandas>=2", "pyarrow>=14"]


def test_the_all_extra_expands_into_every_features_requirements():
    everything = extras.extra_requirements("all")
    for feature in ("plot", "fmi", "sweep", "docs"):
        assert set(extras.extra_requirements(feature)) <= set(everything)
    assert not any(r.startswith("nflow-compat") for r in everything)


def _installed_copy(tmp_path, monkeypatch, direct_url):
    """The package as pip lays it out in site-packages, with ``direct_url`` as its PEP 610
    record (``None``: none, as from an index)."""
    site = tmp_path / "site-packages"
    (site / "nflow_compat").mkdir(parents=True)
    info = site / "nflow_compat-0.1.0.dist-info"
    info.mkdir()
    if direct_url is not None:
        (info / "direct_url.json").write_text(json.dumps(direct_url))
    monkeypatch.setattr(extras, "PACKAGE_DIR", site / "nflow_compat")
    monkeypatch.chdir(tmp_path)


def test_an_installed_wheel_names_the_wheel(tmp_path, monkeypatch):
    wheel = tmp_path / "dist" / "nflow_compat-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK")
    _installed_copy(tmp_path, monkeypatch, {"url": wheel.as_uri(), "archive_info": {}})
    assert extras.install_source() == ("dist/nflow_compat-0.1.0-py3-none-any.whl", False)
    assert command(extras.install_hint("plot"))[-1] == "dist/nflow_compat-0.1.0-py3-none-any.whl[plot]"


def test_a_folder_installed_by_path_names_the_folder(tmp_path, monkeypatch):
    folder = tmp_path / "nflow-compat"
    folder.mkdir()
    _installed_copy(tmp_path, monkeypatch, {"url": folder.as_uri(), "dir_info": {}})
    assert command(extras.install_hint("sweep"))[-1] == "./nflow-compat[sweep]"


def test_from_an_index_or_a_wheel_since_removed_it_is_the_package_name(tmp_path, monkeypatch):
    _installed_copy(tmp_path, monkeypatch, None)
    assert extras.install_source() == (None, False)
    assert command(extras.install_hint("fmi"))[-1] == "nflow-compat[fmi]"
    gone = tmp_path / "gone.whl"
    _installed_copy(tmp_path / "b", monkeypatch, {"url": gone.as_uri(), "archive_info": {}})
    assert command(extras.install_hint("fmi"))[-1] == "nflow-compat[fmi]"


# ----------------------------------------------------------------------------- the features' errors

def test_fmu_blocks_without_fmpy_say_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "fmpy", None)            # makes `import fmpy` fail
    fmi._fmpy.cache_clear()
    try:
        with pytest.raises(nc.SimulationError) as caught:
            fmi._fmpy()
    finally:
        fmi._fmpy.cache_clear()
    assert caught.value.code == "fmi_unavailable"
    assert caught.value.message.endswith(extras.install_hint("fmi"))


def test_sweeps_without_dask_say_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nflow_compat.sweeps.run", None)   # as if dask were missing
    monkeypatch.delattr(nc.sweeps, "run", raising=False)                # (an earlier test imported it)
    with pytest.raises(nc.SimulationError) as caught:
        nc.sweep({})
    assert caught.value.code == "missing_dependency"
    assert caught.value.message.endswith(extras.install_hint("sweep"))
