"""``make dev`` keeps a DAGSTER_HOME the user set, and uses the project's otherwise."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from rag_pipeline.project_paths import PROJECT_ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_dagster_home_is_the_users_when_set(tmp_path: Path):
    probe = tmp_path / "probe.mk"
    probe.write_text(f"include {PROJECT_ROOT / 'Makefile'}\nprobe:\n\t@echo $$DAGSTER_HOME\n")
    env = {k: v for k, v in os.environ.items() if k != "DAGSTER_HOME"}

    def home(**extra: str) -> str:
        return subprocess.run(["make", "-s", "-f", str(probe), "probe"], cwd=PROJECT_ROOT,
                              env={**env, **extra}, capture_output=True, text=True,
                              check=True).stdout.strip()

    assert home() == str(PROJECT_ROOT / "dagster_home")
    assert home(DAGSTER_HOME=str(tmp_path / "mine")) == str(tmp_path / "mine")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_uis_port_is_3000_unless_dev_port_says_otherwise():
    # Found by a new user: `make dev` had no way to choose a port.
    def command(*given: str) -> str:
        return subprocess.run(["make", "-n", "-s", "dev", *given], cwd=PROJECT_ROOT,
                              capture_output=True, text=True, check=True).stdout.splitlines()[-1]

    assert command().endswith("-m rag_pipeline.dagster_dev -w workspace.yaml -p 3000")
    assert command("DEV_PORT=3345").endswith("-m rag_pipeline.dagster_dev -w workspace.yaml -p 3345")
