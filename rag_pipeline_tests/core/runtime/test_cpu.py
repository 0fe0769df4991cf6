"""The CPU's name and flags, as a runtime's timing record and the benchmark pages name it."""

from __future__ import annotations

import platform
from pathlib import Path

from rag_pipeline.core.runtime.cpu import Cpu, this_cpu


def test_the_first_processors_name_and_flags(tmp_path: Path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Test CPU 9000\n"
                       "flags\t\t: fpu avx2 avx512_vnni\n\n"
                       "processor\t: 1\nmodel name\t: Other CPU\nflags\t\t: fpu\n",
                       encoding="utf-8")
    assert this_cpu(cpuinfo) == Cpu("Test CPU 9000", frozenset({"fpu", "avx2", "avx512_vnni"}))


def test_arm_features_are_its_flags_and_an_empty_name_is_passed_over(tmp_path: Path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t:\nFeatures\t: fp asimd sve\n"
                       "model name\t: Neoverse-V1\n", encoding="utf-8")
    assert this_cpu(cpuinfo) == Cpu("Neoverse-V1", frozenset({"fp", "asimd", "sve"}))


def test_without_cpuinfo_the_platform_names_it(tmp_path: Path):
    assert this_cpu(tmp_path / "absent") == Cpu(platform.processor() or platform.machine(),
                                                frozenset())
