"""``rag-pipeline init``: a commented configuration for a user's folder, written next to it."""

from __future__ import annotations

from pathlib import Path

import click

from rag_pipeline.cli.corpus_param import CorpusParam
from rag_pipeline.cli.edge import echo, fail, read_config


@click.command()
@click.argument("folder", type=CorpusParam())
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Where to write the configuration (default: <FOLDER>.rag_pipeline.toml next "
                   "to the folder; required for a source URI).")
@click.option("--force", is_flag=True, help="Overwrite an existing configuration file.")
@click.pass_context
def init(ctx: click.Context, folder: Path | str, output: Path | None, force: bool) -> None:
    """Write a commented configuration for FOLDER (its corpus, its data folder, the production
    profile) next to it, so the project's own rag_pipeline.toml stays as it is. FOLDER may be a
    source URI instead (s3://bucket/prefix, git+file:///repo[@ref], git+https://...), with
    --output naming the file (the data folder defaults to NAME.rag-data beside NAME.rag_pipeline.toml)."""
    if isinstance(folder, str):
        if output is None:
            fail(f"{folder} is a source URI: --output FILE says where to write its configuration")
        output = output.absolute()
        given = ctx.find_root().params.get("data_dir")
        stem = output.name.removesuffix(".toml").removesuffix(".rag_pipeline")
        data_dir = (given or output.with_name(stem + ".rag-data")).absolute()
        if output.exists() and not force:
            fail(f"{output} exists: edit it, or pass --force to write it again")
        _write(folder, data_dir, output)
        return
    folder = folder.resolve()
    output = (output or folder.with_name(folder.name + ".rag_pipeline.toml")).absolute()
    given = ctx.find_root().params.get("data_dir")
    data_dir = (given or folder.with_name(folder.name + ".rag-data")).absolute()
    if output.exists() and not force:
        fail(f"{output} exists: edit it, or pass --force to write it again")
    if output.resolve().is_relative_to(folder) or data_dir.resolve().is_relative_to(folder):
        fail(f"the configuration and the data folder must be outside {folder} (its files are "
              "indexed)")
    _write(folder, data_dir, output)


def _write(corpus: Path | str, data_dir: Path, output: Path) -> None:
    """Writes the configuration of ``corpus`` (checked by parsing it first) to ``output``."""
    from rag_pipeline.core.config.init_file import folder_config_text
    from rag_pipeline.core.config.parse import parse_config

    text = folder_config_text(corpus, data_dir, output, read_config())
    parse_config(text, output.parent, output)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    echo(f"wrote {output}: corpus {corpus}, data folder {data_dir}, profile production")
    echo(f"next: rag-pipeline --config {output} index")

