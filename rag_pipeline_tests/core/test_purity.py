"""The core is a library: no module of ``rag_pipeline.core`` or of its subpackages
(``core.ingest``, ``core.ingest.formats``, ...) imports Dagster, directly, lazily inside a
function, or through another package of the project; and its stage packages import only
downward, in the order of :data:`STAGES`, but for the few imports :data:`UPWARD` names."""

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


STAGES = ("text", "runtime", "storage", "ingest", "chunking", "embedding", "config", "index",
          "retrieval", "answer", "evaluation")
"""The core's stage packages, bottom to top, the order read from the code: a stage imports only
the stages before it. ``config`` sits above ``embedding`` because a model declaration is made of
the embedding stage's values (``ModelSpec``, ``AdaptRecipe``); ``runtime`` (processes) and
``storage`` (the warehouse) are below everything that reads or writes a table."""

UPWARD: dict[tuple[str, str], str] = {}
"""The imports that run up the stages, each with why. A new one fails the test below; so does
one that is gone (remove it here, the layering got better)."""


def _stage(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["rag_pipeline", "core"] else None


def _core_imports() -> set[tuple[str, str]]:
    """(importing module, imported module) for every import of a core module by another stage's
    module, lazy imports inside functions included."""
    pairs = set()
    for path in sorted(CORE_DIR.rglob("*.py")):
        relative = path.relative_to(CORE_DIR.parent.parent).with_suffix("")
        module = ".".join(relative.parts).removesuffix(".__init__")
        for name in _imported_names(path):
            if _stage(name) is not None and _stage(name) != _stage(module):
                pairs.add((module, name))
    return pairs


def test_every_stage_package_has_its_place():
    packages = sorted(p.name for p in CORE_DIR.iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(STAGES)
    # No module sits in the core outside a stage.
    assert sorted(p.name for p in CORE_DIR.glob("*.py")) == ["__init__.py"]


def test_stages_import_only_downward_but_for_the_named_exceptions():
    # Guard: an import of a later stage (chunking importing retrieval, say) fails here, naming
    # the importing module and what it imports; add it to UPWARD only with the reason.
    order = {stage: position for position, stage in enumerate(STAGES)}
    upward = {(importer, imported) for importer, imported in _core_imports()
              if order[_stage(imported)] > order[_stage(importer)]}
    assert upward == set(UPWARD)


def test_the_layering_check_sees_an_upward_import(tmp_path: Path):
    # Planted flaw: a chunking module that imports the retrieval stage must be reported as
    # upward by the same walk the test above runs.
    module = tmp_path / "planted.py"
    module.write_text("def f():\n    from rag_pipeline.core.retrieval.fusion import Fusion\n")
    order = {stage: position for position, stage in enumerate(STAGES)}
    imported = _imported_names(module)
    assert imported == {"rag_pipeline.core.retrieval.fusion"}
    assert [name for name in imported if order[_stage(name)] > order["chunking"]] == [
        "rag_pipeline.core.retrieval.fusion"]

