"""The definitions come from an explicit build context: two configurations in one process give
two sets of partitions, and nothing where the definitions are built reads the configuration or
the environment at import, but the one ``defs = ...`` Dagster loads."""

from __future__ import annotations

import ast
from pathlib import Path

import dagster as dg

import rag_pipeline.orchestration
from rag_pipeline.definitions import definitions_of
from rag_pipeline.project_paths import PROJECT_ROOT, resolve_context
from rag_pipeline_tests.fake_embedder import hashed_spec

EDGE_READS = {"environ", "getenv", "active_config", "load_config", "config_path", "resolve_context",
              "declared_models", "declared_models_or_fail", "declared_chunkers",
              "definitions_from_environment"}
"""Names whose call (or attribute read) at module level reads configuration or environment."""


def _module_level_reads(path: Path) -> list[str]:
    """The statements that run at import (outside any function or class body) and read
    configuration or environment."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for statement in tree.body:
        if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
                      | ast.Import | ast.ImportFrom):
            continue
        for node in ast.walk(statement):
            name = node.attr if isinstance(node, ast.Attribute) else \
                node.id if isinstance(node, ast.Name) else None
            if name in EDGE_READS:
                found.append(ast.unparse(statement)[:80])
                break
    return found


def test_only_defs_reads_the_environment_at_import():
    files = sorted(Path(rag_pipeline.orchestration.__file__).parent.rglob("*.py"))
    reads = {path.relative_to(PROJECT_ROOT).as_posix(): _module_level_reads(path)
             for path in [*files, PROJECT_ROOT / "rag_pipeline" / "definitions.py"]}
    assert {name: lines for name, lines in reads.items() if lines} == {
        "rag_pipeline/definitions.py": ["defs = definitions_from_environment(os.environ)"]}


def test_two_profiles_build_two_sets_of_partitions_in_one_process(tmp_path: Path):
    spec = hashed_spec()
    evaluation = resolve_context({}, data_dir=tmp_path / "a", profile="evaluation", models=[spec])
    production = resolve_context({}, data_dir=tmp_path / "b", profile="production", models=[spec])
    keys = {}
    for build in (evaluation, production):
        graph = definitions_of(build).resolve_asset_graph()
        keys[build.profile] = graph.get(dg.AssetKey("chunks")).partitions_def.get_partition_keys()
        resources = definitions_of(build).resources
        assert resources["storage"].data_dir == str(build.data_dir)
    assert keys == {"evaluation": ["blind", "blind_overlap", "boundaries", "boundaries_overlap",
                                   "header", "header_overlap"],
                    "production": ["header"]}
