"""``plughost runner-credentials new|revoke|list``: credentials for remote runners.

They act on ``[host.remote] keys_dir`` of the configuration file that ``serve
--config`` reads (see :mod:`plughost.runners.remote_keys`); a running host
reads that folder at every connection and every second, so a revocation takes
effect at once. Only click is imported at the top (``plughost --help`` stays fast).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

__all__ = ["runner_credentials"]

_config_option = click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="The serve configuration file ([host.remote] keys_dir and listen).",
)


def _remote_settings(config_file: Path | None) -> tuple[Path, str | None]:
    from plughost.cli.serve_config import ConfigFileError, ServeConfig

    try:
        config = ServeConfig.load(config_file) if config_file else ServeConfig()
    except ConfigFileError as exc:
        raise click.UsageError(str(exc)) from None
    return Path(config.host.remote.keys_dir), config.host.remote.listen


@click.group("runner-credentials")
def runner_credentials() -> None:
    """Issue and revoke the credentials of remote runners (plughost-runner --connect)."""


@runner_credentials.command("new")
@click.argument("name")
@click.option(
    "--plugin",
    "plugins",
    multiple=True,
    help="A plugin this runner may serve: ID, ID==VERSION, either with @sha256:HEX (the "
    "digest of its whole folder). Repeat for several.",
)
@click.option(
    "--pin",
    "--pin-manifest",
    "pins",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False, exists=True),
    help="A plugin folder: allow its id and version only with exactly these files (a digest "
    "of the whole folder), and register only the tools, commands and APIs it declares when "
    "loaded here (it is loaded in a sandboxed throwaway runner). Repeat for several.",
)
@click.option(
    "--grant",
    "grants",
    multiple=True,
    help="A host capability the runner's plugins may call (group.name, group.*), if their "
    "manifest asks for it too. Repeat for several.",
)
@click.option(
    "--out",
    "out",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    help="Where to write the runner's credential file (mode 0600).",
)
@click.option(
    "--endpoint",
    default=None,
    help="The address runners dial, tcp://HOST:PORT (default: [host.remote] listen).",
)
@_config_option
def new_credential(
    name: str,
    plugins: tuple[str, ...],
    pins: tuple[Path, ...],
    grants: tuple[str, ...],
    out: Path,
    endpoint: str | None,
    config_file: Path | None,
) -> None:
    """Make credential NAME: a key pair for one runner (or a set of identical ones)."""
    from plughost.cli.pinning import pin_folder
    from plughost.runners.remote_keys import AllowEntry, RemoteKeyStore

    keys_dir, listen = _remote_settings(config_file)
    try:
        allow = [AllowEntry.parse(p) for p in plugins]
        pinned = [pin_folder(folder) for folder in pins]
        ids = {entry.plugin_id for entry, _ in pinned}
        allow = [e for e in allow if e.plugin_id not in ids] + [entry for entry, _ in pinned]
        declares = {entry.plugin_sha256: names for entry, names in pinned}
        store = RemoteKeyStore(keys_dir)
        credential = store.issue(name, allow, endpoint or listen or "", list(grants), declares)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump(credential, handle, indent=2)
    click.echo(
        f"credential {name} for {', '.join(credential['plugins'])} written to {out}; "
        f"run: plughost-runner --connect {credential['endpoint'] or 'tcp://HOST:PORT'} "
        f"--credentials {out} --plugins DIR"
    )


@runner_credentials.command("revoke")
@click.argument("name")
@_config_option
def revoke_credential(name: str, config_file: Path | None) -> None:
    """Revoke credential NAME: refused from now on, and a connected runner is cut off."""
    from plughost.runners.remote_keys import RemoteKeyStore

    keys_dir, _ = _remote_settings(config_file)
    if not RemoteKeyStore(keys_dir).revoke(name):
        click.echo(f"no credential named {name} in {keys_dir}", err=True)
        sys.exit(1)
    click.echo(f"credential {name} revoked")


@runner_credentials.command("list")
@_config_option
def list_credentials(config_file: Path | None) -> None:
    """List the live credentials and their allow-lists."""
    from plughost.runners.remote_keys import RemoteKeyStore

    keys_dir, _ = _remote_settings(config_file)
    for credential in RemoteKeyStore(keys_dir).credentials():
        grants = f" (grants {', '.join(credential.grants)})" if credential.grants else ""
        click.echo(f"{credential.name}: {', '.join(str(e) for e in credential.allow)}{grants}")
