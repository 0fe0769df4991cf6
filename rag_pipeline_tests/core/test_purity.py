"""The core is a library: no module of ``rag_pipeline.core`` or of its subpackages
(``core.ingest``, ``core.ingest.formats``, ...) imports Dagster, directly, lazily inside a
function, or through another package of the project."""

from __future__ import annotations

import ast
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import rag_pipeline.core

CORE_DIR = Path(rag_pipeline.core.__file__).parent
CORE_MODULES = sorted(m.name for m in pkgutil.walk_packages([str(CORE_DIR)], "rag_pipeline.core."))


def _imported_names(path: Path) -> set[str]:
    """Every module named by an import statement anywhere in the file (functions included)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
    return names


def test_every_core_module_is_listed():
    assert len(CORE_MODULES) >= 25
    assert "rag_pipeline.core.evaluation.metrics" in CORE_MODULES
    # Subpackages are walked: a module two levels down is listed.
    assert "rag_pipeline.core.ingest.formats.html" in CORE_MODULES


def test_no_core_file_names_dagster_or_a_package_above_the_core():
    # Guard: a core module that writes `import dagster` (even inside a function) or reaches up
    # into the Dagster layer (rag_pipeline.orchestration.assets, .partitions, .resources, ...) fails here.
    offenders = {}
    for path in sorted(CORE_DIR.rglob("*.py")):
        bad = sorted(name for name in _imported_names(path)
                     if name.split(".")[0] == "dagster"
                     or (name.startswith("rag_pipeline") and not name.startswith("rag_pipeline.core")))
        if bad:
            offenders[path.relative_to(CORE_DIR).as_posix()] = bad
    assert offenders == {}


@pytest.mark.slow  # a fresh interpreter importing every core library (seconds)
def test_importing_every_core_module_never_loads_dagster():
    # Guard: catches a transitive import too (a core module importing a third-party module
    # that imports dagster). One fresh interpreter imports every core module in turn.
    code = ("import importlib, json, sys\n"
            f"modules = {CORE_MODULES!r}\n"
            "loaded = {}\n"
            "for name in modules:\n"
            "    importlib.import_module(name)\n"
            "    loaded[name] = 'dagster' in sys.modules\n"
            "print(json.dumps(loaded))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    loaded = json.loads(result.stdout)
    assert sorted(loaded) == CORE_MODULES
    assert [name for name, dagster in loaded.items() if dagster] == []
