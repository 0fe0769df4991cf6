"""``rag-pipeline tokens add|list|revoke``: the bearer tokens a ``serve`` with ``[access]``
accepts, stored as salted scrypt hashes in the data folder (:mod:`rag_pipeline.service.tokens`)."""

from __future__ import annotations

import click

from rag_pipeline.cli.edge import Invocation, config_source, echo, fail, read_config
from rag_pipeline.core.text.arguments import listed


def _store(invocation: Invocation):
    from rag_pipeline.service.tokens import TokenStore

    return TokenStore(invocation.data_dir)


@click.group()
def tokens() -> None:
    """Bearer tokens for `serve` with [access]: add, list, revoke."""


@tokens.command("add")
@click.argument("name")
@click.option("--groups", required=True, help="The groups the token reads for: a,b.")
@click.option("--expires-days", type=float, default=None,
              help="The token stops working after this many days (default: never).")
@click.pass_obj
def add(invocation: Invocation, name: str, groups: str, expires_days: float | None) -> None:
    """Create a token NAME; it is printed once, alone on the last line."""
    from rag_pipeline.service.tokens import TokenError, check_expires_days, check_groups

    try:
        if expires_days is not None:
            try:
                check_expires_days(expires_days)
            except TokenError as exc:
                fail(f"--expires-days: {exc}")
        wanted = check_groups(groups)
        config = read_config()
        policy = config.access
        if policy is not None and policy.groups:
            stray = sorted(set(wanted) - set(policy.groups))
            if stray:
                fail(f"unknown group(s) {listed(stray)}: [access] groups declares "
                     f"{listed(policy.groups)}")
        token = _store(invocation).add(name, wanted, expires_days)
    except TokenError as exc:
        fail(str(exc))
    if policy is None:
        echo(f"note: no [access] in {config_source(config)}: `serve` accepts every request "
             "without a token until it does", err=True)
    elif unknown := sorted(set(wanted) - policy.known_groups):
        echo(f"note: no [access] rule names {listed(unknown)} yet", err=True)
    echo(f"token {name!r} for groups {', '.join(wanted)}: shown once, keep it secret "
         f"(a running serve accepts it within its poll interval)")
    echo(token)


@tokens.command("list")
@click.pass_obj
def list_tokens(invocation: Invocation) -> None:
    """Name, groups, created, last used (and expiry) of every token."""
    from rag_pipeline.service.tokens import TokenError

    store = _store(invocation)
    try:
        records = store.records()
    except TokenError as exc:
        fail(str(exc))
    if not records:
        echo("no tokens: `rag-pipeline tokens add NAME --groups a,b` creates one")
        return
    used = store.last_used()
    echo(f"{'name':24s} {'groups':28s} {'created':25s} {'last used':25s} expires")
    for r in records:
        expires = f"{r.expires} (expired: refused)" if r.expired() else r.expires or "never"
        echo(f"{r.name:24s} {','.join(r.groups):28s} {r.created:25s} "
             f"{used.get(r.id, 'never'):25s} {expires}")


@tokens.command("revoke")
@click.argument("name")
@click.pass_obj
def revoke(invocation: Invocation, name: str) -> None:
    """End token NAME (a running serve refuses it within its poll interval)."""
    from rag_pipeline.service.tokens import TokenError

    try:
        record = _store(invocation).revoke(name)
    except TokenError as exc:
        fail(str(exc))
    echo(f"revoked token {record.name!r} (groups {', '.join(record.groups)})")
