"""The process edge of ``rag-pipeline``: the command group, its environment and its error policy.

Every command module registers on :data:`main` (see :mod:`rag_pipeline.cli`); what they share
lives here: one-line output (:func:`echo`, :func:`fail`), the parsed configuration, the
declared models and the :class:`Invocation` every command is given (its data folder and its
one warehouse handle).
"""

from __future__ import annotations

import math
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import click
from click.core import ParameterSource

from rag_pipeline.core.storage.location import warehouse_location
from rag_pipeline.core.text.suggested_commands import command_line, commands_in
from rag_pipeline.core.text.terminal import escape_controls
from rag_pipeline.project_paths import ENV_CONFIG, ENV_DATA_DIR, ENV_WAREHOUSE

if TYPE_CHECKING:
    from rag_pipeline.core.config.schema import ProjectConfig
    from rag_pipeline.core.storage.warehouse import Warehouse


@dataclass(frozen=True)
class Invocation:
    """What the group's options say for every command: the local data folder and where its
    tables live. The :class:`Warehouse` is built once, here at the edge, on first use (a
    command that never reads a table never loads pyarrow), and handed down to everything
    that reads or writes a table.

    Attributes:
        data_dir: The local data folder (``rag.duckdb``, ``serve.json``, caches).
        location: ``--warehouse`` as given (None: the data folder's own ``warehouse/``).
        config_file: ``--config`` as given, absolute (None: ``RAG_PIPELINE_CONFIG``, else the
            project's own file). It reaches the processes a command starts through their
            environment (``rag-pipeline index``), never through this process's.
    """

    data_dir: Path
    location: str | None = None
    config_file: Path | None = None
    options: tuple[str, ...] = ()
    """The group's options given on the command line (``--config F``, ``--data-dir D``,
    ``--warehouse W``), which a command suggested to the user must repeat (:meth:`command`)."""

    def command(self, *words: str) -> str:
        """``rag-pipeline <the options given> <words>``, quoted for a shell: a command to
        suggest that works on the same configuration, data folder and warehouse as this one."""
        return command_line(self.options, *words)

    def commands_in(self, message: str) -> str:
        """``message`` with each ```rag-pipeline ...``` it suggests given this invocation's
        options."""
        return commands_in(message, self.options)

    @property
    def config_path(self) -> Path:
        """The configuration file this invocation reads."""
        from rag_pipeline.project_paths import config_path

        return self.config_file or config_path()

    @cached_property
    def warehouse(self) -> Warehouse:
        """The one handle on the tables of this invocation."""
        from rag_pipeline.core.storage.warehouse import Warehouse

        return Warehouse(self.data_dir, self.location)

    @property
    def tables_at(self) -> str:
        """Where the tables live (a folder or a URI), without building the handle."""
        return warehouse_location(self.data_dir, self.location)


def _prepare_environment() -> None:
    """The CLI is the process edge: the offline switch (no model hub; the libraries' own
    switches, read only from the environment: tokenizers' threads, hub progress bars,
    transformers' log level), and interrupts that work even when it was started as a background
    job (the Dagster processes it starts then stop on SIGTERM: ``restore_default_interrupts``).
    The Dagster home is not set here: ``index`` hands it to what it starts
    (:func:`~rag_pipeline.project_paths.dagster_home`)."""
    from rag_pipeline.core.runtime.processes import restore_default_interrupts

    restore_default_interrupts()
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


def echo(message: str = "", err: bool = False) -> None:
    """Print one line; control characters from documents or endpoints are escaped first."""
    click.echo(escape_controls(message), err=err)


def _config_path() -> Path:
    """The configuration file of the running command's :class:`Invocation` (``--config``),
    else ``RAG_PIPELINE_CONFIG``, else the project's own."""
    from rag_pipeline.project_paths import config_path

    ctx = click.get_current_context(silent=True)
    invocation = ctx.find_object(Invocation) if ctx is not None else None
    return invocation.config_path if invocation is not None else config_path()


def declared_models_or_fail(config: ProjectConfig | None = None):
    """The models ``config`` declares (default: the invocation's configuration file, read
    now), or a one-line failure naming what is wrong with the config file."""
    from rag_pipeline.core.config.keys import declared_models as declared
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError

    try:
        return declared(config if config is not None else load_config(_config_path()))
    except (ModelConfigError, FileNotFoundError) as exc:
        fail(str(exc))


def declared_model(model_key: str | None, config: ProjectConfig | None = None):
    """The model a command uses: the declared model ``model_key`` names (``--model``), else
    the default (declared first), of ``config`` (default: the invocation's configuration file);
    a one-line failure when the key is not declared."""
    from rag_pipeline.core.embedding.models import ModelMismatchError, find_model

    models = declared_models_or_fail(config)
    try:
        return find_model(model_key, models) if model_key is not None else models[0]
    except ModelMismatchError as exc:
        fail(str(exc))


def load_model(spec, data_dir: Path):
    """The loaded model (an int8 model not exported yet is exported, calibrated on its fixed
    texts, into the model cache)."""
    from rag_pipeline.core.embedding.embedder import load_embedder

    return load_embedder(spec)


def fail(message: str, code: int = 2) -> None:
    """Exit with ``error: <message>`` on stderr, as one line."""
    echo(f"error: {' '.join(message.split())}", err=True)
    sys.exit(code)


class FiniteFloatRange(click.FloatRange):
    """``click.FloatRange`` that also refuses NaN (which no range comparison catches) and the
    infinities (which an open-ended range lets through)."""

    def convert(self, value: object, param: click.Parameter | None,
                ctx: click.Context | None) -> float:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number.", param, ctx)
        if math.isinf(number):
            self.fail(f"{value!r} is not finite.", param, ctx)
        return number


def _misplaced_option(exc: click.NoSuchOption) -> str | None:
    """Where an option of ``rag-pipeline`` itself belongs when it was written after a command
    (``rag-pipeline index --config FILE``), or None for any other unknown option."""
    if exc.ctx is None:
        return None
    root = exc.ctx.find_root()
    if exc.option_name not in {opt for param in root.command.params for opt in param.opts}:
        return None
    command = exc.ctx.command_path.removeprefix(root.command_path).strip()
    return (f"No such option {exc.option_name!r} for `{command}`: {exc.option_name} is an option "
            f"of rag-pipeline itself and goes before the command: "
            f"`rag-pipeline {exc.option_name} ... {command}`")


class OneLineErrors(click.Group):
    """Every failure ends in one line on stderr that names its cause: a usage error without the
    usage block, and an unexpected exception as its type and message, never a traceback."""

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: object) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.exceptions.NoArgsIsHelpError:
            raise
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.Abort, click.exceptions.NoArgsIsHelpError):
            raise
        except click.NoSuchOption as exc:
            fail(_misplaced_option(exc) or exc.format_message(), exc.exit_code)
        except click.ClickException as exc:
            fail(exc.format_message(), exc.exit_code)
        except KeyboardInterrupt:
            # Ctrl-C where no command records it: end as a shell reports SIGINT, quietly.
            sys.exit(128 + signal.SIGINT)
        except BrokenPipeError:
            # The reader of the output has gone (`rag-pipeline status | head`): stop quietly,
            # with what a process ended by SIGPIPE reports, and nothing left to flush.
            if sys.stdout is not None:
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(128 + signal.SIGPIPE)
        except Exception as exc:  # the last resort: the cause in one line, not a traceback
            fail(f"{type(exc).__name__}: {exc}")


@click.group(cls=OneLineErrors)
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None,
              envvar=ENV_DATA_DIR,
              help="Folder of rag.duckdb, the Parquet tables (unless --warehouse is given), the "
                   "bundled corpus's export and the evaluation's files (default: the config's "
                   f"[index] data_dir, else the project's data/; env {ENV_DATA_DIR}).")
@click.option("--warehouse", default=None, envvar=ENV_WAREHOUSE,
              help="Where the Parquet tables live: a folder or an object-store URI such as "
                   "s3://bucket/prefix (credentials from the AWS environment variables; "
                   f"env {ENV_WAREHOUSE}).")
@click.option("--config", "config_file", type=click.Path(path_type=Path), default=None,
              help="The configuration file (default: the project's rag_pipeline.toml; "
                   f"`rag-pipeline init DIR` writes one for a folder; env {ENV_CONFIG}).")
@click.pass_context
def main(ctx: click.Context, data_dir: Path | None, warehouse: str | None,
         config_file: Path | None) -> None:
    """A versioned hybrid search index that cites exact places and refuses when it must."""
    from rag_pipeline.project_paths import DEFAULT_DATA_DIR

    _prepare_environment()
    if config_file is not None:
        if not config_file.is_file():
            what = "is a folder" if config_file.is_dir() else "does not exist"
            fail(f"--config {str(config_file)!r} {what}: it must name a rag_pipeline.toml file "
                 "(`rag-pipeline init DIR` writes one)")
        config_file = config_file.absolute()
    given = [(flag, value) for flag, name, value in (
        ("--config", "config_file", config_file), ("--data-dir", "data_dir", data_dir),
        ("--warehouse", "warehouse", warehouse))
        if value is not None and ctx.get_parameter_source(name) is ParameterSource.COMMANDLINE]
    config = read_config(config_file)  # every command: a wrong key fails each the same way
    ctx.obj = Invocation(data_dir or config.data_dir or DEFAULT_DATA_DIR,
                         warehouse, config_file,
                         tuple(part for flag, value in given for part in (flag, str(value))))


def eval_folder() -> Path:
    """The folder of the evaluation's ``gold.jsonl`` and ``ood.jsonl``: ``RAG_PIPELINE_EVAL_DIR``
    when set, else the bundled corpus's; a one-line failure when the variable names no folder."""
    from rag_pipeline.project_paths import DEFAULT_EVAL_DIR, ENV_EVAL_DIR

    value = os.environ.get(ENV_EVAL_DIR)
    if not value:
        return DEFAULT_EVAL_DIR
    folder = Path(value)
    if not folder.is_dir():
        what = "is a file" if folder.exists() else "does not exist"
        fail(f"{ENV_EVAL_DIR}={value!r} {what}: it must name the folder of gold.jsonl and "
             "ood.jsonl (unset it for the bundled corpus's)")
    return folder


def dagster_home() -> Path:
    """``DAGSTER_HOME`` (the project's own unless set); a one-line failure when it names
    something that is not a folder."""
    from rag_pipeline.project_paths import dagster_home as resolved_home

    home = resolved_home(os.environ)
    if home.exists() and not home.is_dir():
        fail(f"DAGSTER_HOME={str(home)!r} is not a folder: it must name the Dagster home folder "
             "(unset it for the project's own)")
    return home


def every_passed(every: int, show: Callable[[int, int], None]) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` callback that calls ``show(done, total)`` each time the count
    passes a multiple of ``every`` (a count that moves by batches seldom lands on one), and at
    the end."""
    shown = 0

    def progress(done: int, total: int) -> None:
        nonlocal shown
        if done == total or done // every > shown // every:
            shown = done
            show(done, total)

    return progress


def read_config(path: Path | None = None):
    """The configuration file (``path``, else the invocation's), parsed, or a one-line failure
    naming what is wrong with it."""
    from rag_pipeline.core.config.parse import load_config
    from rag_pipeline.core.embedding.models import ModelConfigError

    try:
        return load_config(path or _config_path())
    except (ModelConfigError, FileNotFoundError) as exc:
        fail(str(exc))


def config_source(config: ProjectConfig) -> str:
    """The configuration file ``config`` was read from, or that none was (the built-in
    default): how a message names the file that declares, or lacks, what it reports."""
    return str(config.path) if config.path else "the built-in default (no rag_pipeline.toml)"


def hold_standard_descriptors() -> None:
    """Opens ``/dev/null`` on each of descriptors 0, 1 and 2 the process started without
    (``>&-``): the next pipe or file opened would otherwise take its number, and a child
    started with its own stdout (the runs' worker) would lose that pipe to it."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            os.open(os.devnull, os.O_RDWR)  # the lowest free number: this one


def run(prog_name: str = "rag-pipeline") -> None:
    """The ``rag-pipeline`` process: :func:`main`, then the exit without the interpreter's
    teardown of its modules (0.4 to 0.8 s of every command with Dagster, DuckDB and the model's
    runtime loaded). The exit handlers still run (logs flushed, temporary folders removed);
    with a thread still running, the exit is the ordinary one, which waits for it."""
    import atexit
    import threading

    hold_standard_descriptors()
    try:
        main(prog_name=prog_name)
        code = 0
    except SystemExit as exc:
        code = exc.code
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    status = code if isinstance(code, int) else 0 if code is None else 1
    if not isinstance(code, int | None) and sys.stderr is not None:
        print(code, file=sys.stderr)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started with it closed (`>&-`)
            continue
        try:
            stream.flush()
        except BrokenPipeError:  # the reader has gone, as in OneLineErrors.invoke
            status = status or 128 + signal.SIGPIPE
        except (OSError, ValueError):
            status = status or 1
    os._exit(status)

