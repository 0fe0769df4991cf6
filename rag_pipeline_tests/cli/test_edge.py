"""The process edge: one-line errors (no usage block, no traceback), escaped messages, the
configuration variable, finite numbers and a closed pipe.

Fast: validation runs before an index or a model is opened, so no index is built here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.cli.edge import every_passed
from rag_pipeline_tests.cli.invoke import one_line_failure


def test_usage_errors_are_one_line_without_the_usage_block():
    assert one_line_failure("nosuch") == (2, "error: No such command 'nosuch'.")
    assert one_line_failure("ask") == (2, "error: Missing argument 'QUESTION'.")


@pytest.mark.parametrize(("args", "command"), [
    (["index", "--config", "team.toml"], "index"),
    (["status", "--data-dir", "data"], "status"),
    (["gold", "draft", "--warehouse", "s3://b/p"], "gold draft"),
])
def test_an_option_of_the_group_after_a_command_says_where_it_goes(args, command):
    # What a new user types first (`rag-pipeline index --config FILE`): click alone says only
    # "No such option", which sends them looking for an option `index` does not have.
    option = args[-2]
    assert one_line_failure(*args) == (2, (
        f"error: No such option '{option}' for `{command}`: {option} is an option of "
        f"rag-pipeline itself and goes before the command: `rag-pipeline {option} ... {command}`"))


@pytest.mark.parametrize("command", [["status"], ["tokens", "list"], ["models"]])
def test_a_model_package_not_installed_fails_every_command_before_it_prints(tmp_path: Path,
                                                                          command: list[str]):
    # Found by a newcomer checking the docs ("every key is checked when the file is read"):
    # `status` printed its documents report, then failed; `tokens list` did not fail at all.
    config = tmp_path / "team.toml"
    config.write_text('[[models]]\nname = "m"\npackage = "no_such_model_pkg"\n', encoding="utf-8")
    assert one_line_failure("--config", str(config), "--data-dir", str(tmp_path), *command) == (
        2, f"error: {config}: [[models]] #1 ('m'): `package`: model package "
           "'no_such_model_pkg' is not installed (pip install no-such-model-pkg)")


def test_an_unknown_option_of_a_command_keeps_clicks_message():
    assert one_line_failure("status", "--nosuch") == (2, "error: No such option '--nosuch'.")


def test_an_unexpected_error_is_one_line_with_its_type_not_a_traceback(tmp_path: Path):
    # Planted: a damaged DuckDB file beside a documents table folder; DuckDB's own error must
    # reach the user as one line (exit 2, as every error: `ask` exits 1 for a refusal).
    (tmp_path / "warehouse" / "documents").mkdir(parents=True)
    (tmp_path / "warehouse" / "documents" / "part-0.parquet").write_bytes(b"x")
    (tmp_path / "rag.duckdb").write_bytes(b"garbage")
    assert one_line_failure("--data-dir", str(tmp_path), "status") == (
        2, f'error: IOException: IO Error: The file "{tmp_path / "rag.duckdb"}" exists, but it '
           "is not a valid DuckDB database file!")


def test_control_characters_in_a_message_are_escaped(tmp_path: Path):
    # Planted: a data folder whose name clears the screen, in an error message that quotes it.
    data = tmp_path / "d\x1b[2J"
    (data / "warehouse" / "documents").mkdir(parents=True)
    (data / "warehouse" / "documents" / "part-0.parquet").write_bytes(b"x")
    (data / "rag.duckdb").write_bytes(b"garbage")
    assert one_line_failure("--data-dir", str(data), "status") == (
        2, f'error: IOException: IO Error: The file "{tmp_path}/d\\u001b[2J/rag.duckdb" exists, '
           "but it is not a valid DuckDB database file!")


@pytest.mark.parametrize(("args", "message"), [
    (["serve", "--poll", "nan"], "Invalid value for '--poll': 'nan' is not a number."),
    (["eval", "--beir", ".", "--k1", "nan"], "Invalid value for '--k1': 'nan' is not a number."),
    (["eval", "--beir", ".", "--k1", "-5"],
     "Invalid value for '--k1': -5.0 is not in the range x>=0.0."),
    (["eval", "--beir", ".", "--k1", "inf"], "Invalid value for '--k1': 'inf' is not finite."),
])
def test_nan_infinite_and_negative_numbers_are_refused(args, message):
    assert one_line_failure(*args) == (2, f"error: {message}")


@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_config_variable_naming_no_file_is_an_error(tmp_path: Path, kind: str):
    target = tmp_path / ("absent.toml" if kind == "missing" else "")
    what = "does not exist" if kind == "missing" else "is a folder"
    result = CliRunner(env={"RAG_PIPELINE_CONFIG": str(target)}).invoke(
        main, ["--data-dir", str(tmp_path), "models"])
    assert (result.exit_code, result.stderr) == (
        2, f"error: RAG_PIPELINE_CONFIG={str(target)!r} {what}: it must name a rag_pipeline.toml "
           "file (unset it for the project's own)\n")


def test_output_piped_into_a_reader_that_quits_ends_quietly():
    import subprocess
    import sys

    from rag_pipeline.project_paths import PROJECT_ROOT

    # Planted: the reader closes the pipe at once, as `| head -0` does; every write then fails.
    child = subprocess.Popen([sys.executable, "-c", "from rag_pipeline.cli import main; main()",
                              "models"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert (child.wait(timeout=120), stderr) == (141, "")


@pytest.mark.parametrize("entry", ["main", "run"])
def test_output_piped_into_a_reader_that_quits_ends_quietly_from_either_entry(entry: str):
    import subprocess
    import sys

    from rag_pipeline.project_paths import PROJECT_ROOT

    # Planted: the reader closes the pipe at once, as `| head -0` does; every write then fails
    # (run's last flush too).
    child = subprocess.Popen([sys.executable, "-c", f"from rag_pipeline.cli import {entry}; "
                              f"{entry}()", "models"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    child.stdout.close()
    stderr = child.stderr.read().decode()
    assert (child.wait(timeout=120), stderr) == (141, "")


@pytest.mark.parametrize(("command", "closed", "code", "output"), [
    ("--help", ">&-", 0, ""),
    ("--config no-such.toml models", ">&-", 2,
     "error: --config 'no-such.toml' does not exist: it must name a rag_pipeline.toml file "
     "(`rag-pipeline init DIR` writes one)\n"),
    ("nosuch", "2>&-", 2, ""),
])
def test_a_command_started_with_stdout_or_stderr_closed_ends_with_its_own_code(
        command: str, closed: str, code: int, output: str):
    import subprocess
    import sys

    from rag_pipeline.project_paths import PROJECT_ROOT

    # Python starts with sys.stdout (or sys.stderr) None when its descriptor is closed; what is
    # left open is read back (stderr for a closed stdout, stdout for a closed stderr).
    left = "2>&1" if closed == ">&-" else ""
    done = subprocess.run(["bash", "-c", f"{sys.executable} -m rag_pipeline.cli {command} "
                                         f"{left} {closed}"],
                          cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout + done.stderr) == (code, output)


def test_the_command_ends_without_the_interpreters_teardown_but_runs_its_exit_handlers(
        tmp_path: Path):
    import subprocess
    import sys

    from rag_pipeline.project_paths import PROJECT_ROOT

    # A module's teardown would print; an exit handler writes a file.
    handler, teardown = tmp_path / "handler", tmp_path / "teardown"
    script = (
        "import atexit, pathlib, sys\n"
        f"atexit.register(lambda: pathlib.Path({str(handler)!r}).write_text('ran'))\n"
        "class Teardown:\n"
        f"    def __del__(self): pathlib.Path({str(teardown)!r}).write_text('ran')\n"
        "sys.modules['teardown_witness'] = Teardown()\n"
        "sys.argv[1:] = ['--config', 'no-such.toml', 'models']\n"
        "from rag_pipeline.cli import run\n"
        "run()\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", "error: --config 'no-such.toml' does not exist: it must name a rag_pipeline.toml "
               "file (`rag-pipeline init DIR` writes one)\n")
    assert handler.read_text() == "ran"
    assert not teardown.exists()


ENV_SWITCHES = {"HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM", "HF_HUB_DISABLE_PROGRESS_BARS",
                "TRANSFORMERS_VERBOSITY"}
"""The offline switch and the libraries' own switches: the only variables the product sets."""


def test_the_product_sets_no_environment_variable_but_the_offline_switches():
    import ast

    import rag_pipeline

    root = Path(rag_pipeline.__file__).parent
    assigned = {}
    for path in sorted(root.rglob("*.py")):
        if "benchmarks" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = None
            if isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                target = next((t for t in targets if isinstance(t, ast.Subscript)
                               and ast.unparse(t.value) == "os.environ"), None)
                name = ast.unparse(target.slice) if target is not None else None
            elif isinstance(node, ast.Call) and ast.unparse(node.func) in {
                    "os.environ.setdefault", "os.environ.update", "os.putenv"}:
                target, name = node, ast.unparse(node.args[0]) if node.args else "?"
            if target is not None:
                assigned.setdefault(path.relative_to(root).as_posix(), set()).add(name.strip("'\""))
    assert assigned == {"cli/edge.py": ENV_SWITCHES}


def test_progress_is_shown_each_time_the_count_passes_a_step_and_at_the_end():
    shown = []
    progress = every_passed(256, lambda done, total: shown.append((done, total)))
    for done in (96, 192, 288, 384, 480, 576, 600):  # batches of 96 never land on 256 or 512
        progress(done, 600)
    assert shown == [(288, 600), (576, 600), (600, 600)]


def test_a_suggested_command_carries_the_invocations_options():
    from rag_pipeline.cli.edge import Invocation

    given = Invocation(Path("/srv/rag data"), None, Path("/srv/team.toml"),
                       ("--config", "/srv/team.toml", "--data-dir", "/srv/rag data"))
    assert given.command("eval", "--gold", "g.jsonl") == (
        "rag-pipeline --config /srv/team.toml --data-dir '/srv/rag data' eval --gold g.jsonl")
    reason = ("no gold set for this corpus: g.jsonl does not exist; nothing to score. Write one "
              "with `rag-pipeline gold draft`")
    assert given.commands_in(reason) == reason.replace(
        "`rag-pipeline gold", "`rag-pipeline --config /srv/team.toml --data-dir '/srv/rag data' gold")
    assert Invocation(Path("data")).commands_in(reason) == reason
