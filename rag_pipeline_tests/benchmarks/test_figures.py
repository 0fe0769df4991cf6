"""Pages of figures are written by the benchmark that measured them, never by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from rag_pipeline.benchmarks import figures
from rag_pipeline.benchmarks.figures import HEADER_PREFIX, MEASUREMENTS_DIR, Machine


def test_render_heads_the_page_with_command_machine_and_time():
    machine = Machine(cpu="AMD EPYC 7B13", cores=2, flags=(), load=(1.5, 0.75, 0.25))
    page = figures.render("Ask latency", "| a |\n|---|\n| 1 |\n",
                          command="python -m rag_pipeline.benchmarks.ask_latency --write-docs",
                          machine=machine, when=datetime(2026, 12, 1, 22, 30, tzinfo=UTC))
    assert page == (
        "<!-- written by python -m rag_pipeline.benchmarks.ask_latency --write-docs -->\n"
        "# Ask latency\n\n"
        "Measured 2026-12-01 22:30 UTC on AMD EPYC 7B13, 2 cores (no int8 dot-product "
        "instructions (AVX2 or older)), load average 1.50, 0.75, 0.25 at the start, by "
        "`python -m rag_pipeline.benchmarks.ask_latency --write-docs`. This page is written by "
        "that command: run it again to refresh it.\n\n"
        "| a |\n|---|\n| 1 |\n")


def test_this_machine_reads_model_and_int8_flags(tmp_path: Path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Test CPU 9000\n"
                       "flags\t\t: fpu avx2 avx512_vnni\n", encoding="utf-8")
    machine = figures.this_machine(cpuinfo)
    assert (machine.cpu, machine.flags) == ("Test CPU 9000", ("avx512_vnni",))
    assert machine.cores >= 1


def test_write_figures_replaces_the_page(tmp_path: Path):
    first = figures.write_figures("x", "X", "one", command="cmd", folder=tmp_path)
    figures.write_figures("x", "X", "two", command="cmd", folder=tmp_path)
    assert first == tmp_path / "x.md"
    assert first.read_text(encoding="utf-8").endswith("\ntwo\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.md"]


def test_markdown_table_escapes_pipes():
    assert figures.markdown_table(["a", "b"], [["x|y", 2]]) == "| a | b |\n|---|---|\n| x\\|y | 2 |"


def test_every_measurements_page_was_written_by_a_benchmark():
    # Guard: a page of figures typed by hand (no header naming the command) fails here.
    pages = sorted(p for p in MEASUREMENTS_DIR.glob("*.md") if p.name != "index.md")
    assert pages, "docs/measurements holds no page of figures"
    unheaded = [p.name for p in pages
                if not p.read_text(encoding="utf-8").startswith(HEADER_PREFIX + "python -m ")]
    assert unheaded == []


def test_as_markdown_keeps_tables_and_headings_and_blocks_the_rest():
    from rag_pipeline.benchmarks.record import as_markdown

    output = ("partition header: 1275 chunks\n"
              "| stage | ms |\n|---|---|\n| total | 6.1 |\n"
              "\n"
              "## twin\n"
              "load 1.2\n")
    assert as_markdown(output) == ("```text\npartition header: 1275 chunks\n```\n\n"
                                   "| stage | ms |\n|---|---|\n| total | 6.1 |\n\n"
                                   "### twin\n\n"
                                   "```text\nload 1.2\n```\n")


def test_record_refuses_a_module_that_is_not_a_benchmark(capsys):
    import pytest

    from rag_pipeline.benchmarks.record import main

    with pytest.raises(SystemExit):
        main(["../etc"])
    assert "not a benchmark module" in capsys.readouterr().err
