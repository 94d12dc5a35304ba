"""The lazy registry of handler modules (nflow_compat/blocks/handlers.py): a diagram's types
load their libraries' handler modules, and those register every type of the library that runs."""
from __future__ import annotations

import json
import subprocess
import sys

from nflow_compat.blocks.handlers import LOADER_OF_LIBRARY, handlers_for, load_all, supported_types
from nflow_compat.manifests import block_types, libraries

CHILD = """
import json, sys
from nflow_compat.blocks import REGISTRY
from nflow_compat.blocks.handlers import handlers_for
from nflow_compat.manifests import block_types
library = sys.argv[1]
handlers_for([t for t, bt in block_types().items() if bt.library == library])
print(json.dumps(sorted(REGISTRY)))
"""


def test_every_library_has_a_loader():
    assert set(LOADER_OF_LIBRARY) == set(libraries())


def test_a_library_s_types_load_the_module_that_registers_them():
    # each in a fresh interpreter, where nothing else has loaded a handler module yet
    runnable: dict = {}
    for row in supported_types():
        runnable.setdefault(row["library"], set()).add(row["type"])
    children = {library: subprocess.Popen([sys.executable, "-c", CHILD, library], stdout=subprocess.PIPE, text=True)
                for library in LOADER_OF_LIBRARY}
    for library, child in children.items():
        out, _ = child.communicate(timeout=120)
        assert child.returncode == 0, library
        assert runnable[library] <= set(json.loads(out)), library


def test_handlers_for_answers_the_types_asked_for():
    registry = handlers_for(["sine", "Mass"])
    assert {"sine", "Mass"} <= set(registry)
    assert set(block_types()) <= set(handlers_for(block_types()))


def test_the_types_whose_plans_read_files_say_so():
    # nflow-sim serve compiles their requests again each time (a file may have changed)
    assert {t for t, h in load_all().items() if h.reads_files} == {"fileSource", "fmu", "fmuMe", "modelica"}
