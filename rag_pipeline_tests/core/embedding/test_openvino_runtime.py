"""OpenVINO's telemetry is declined for the project's processes, and only for them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# What OpenVINO's model conversion does first (openvino.tools.ovc.telemetry_utils): configure
# the telemetry singleton with the opt-in dialog off, where "no consent file" counts as consent.
PROBE = """
import openvino_telemetry as tm
telemetry = tm.Telemetry(app_name="OVC", app_version="probe", tid="G-PROBE", backend="ga4",
                         enable_opt_in_dialog=False, disable_in_ci=True)
print(telemetry.consent)
"""


def _run(tmp_path: Path, prelude: str) -> tuple[str, list[str]]:
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "TF_BUILD", "JENKINS_URL")}
    env["HOME"] = str(home)
    done = subprocess.run([sys.executable, "-c", prelude + PROBE], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*"))
    return done.stdout.strip(), written


def test_without_the_guard_a_machine_with_no_consent_file_consents(tmp_path: Path):
    pytest.importorskip("openvino_telemetry")
    # The control: what any process that converts a model does unless told otherwise.
    assert _run(tmp_path, "") == ("True", ["intel", "intel/openvino_ga_cid", "intel/stats"])


def test_the_projects_openvino_declines_and_writes_nothing(tmp_path: Path):
    pytest.importorskip("openvino_telemetry")
    prelude = "from rag_pipeline.core.embedding.openvino_runtime import openvino\nopenvino()\n"
    assert _run(tmp_path, prelude) == ("False", [])
