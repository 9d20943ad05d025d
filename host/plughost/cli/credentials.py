"""``plughost runner-credentials new|revoke|list``: credentials for remote runners.

They act on ``[host.remote] keys_dir`` of the configuration file that ``serve
--config`` reads (see :mod:`plughost.remote.keys`); a running host
reads that folder at every connection and every second, so a revocation takes
effect at once. Only click is imported at the top (``plughost --help`` stays fast).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from plughost.remote.keys import AllowEntry

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
    """Issue and revoke the credentials of remote runners (plughost-runner --connect).

    A credential names the plugins one runner (or a set of identical runners)
    may serve and the host capabilities they may call; the host reads
    [host.remote] keys_dir of --config at every connection, so a new or
    revoked credential takes effect at once.

    \b
    Examples:
      plughost runner-credentials new gpu-box --plugin author.ocr==1.2.0 --out gpu-box.json \\
          --config plughost.toml
      plughost runner-credentials list --config plughost.toml --json
      plughost runner-credentials revoke gpu-box --config plughost.toml
    """


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
    """Make credential NAME: a key pair for one runner (or a set of identical ones).

    Copy the file written to --out to the runner's machine over a channel you
    trust; the host keeps only its public key, the allow-list and the grants.

    \b
    Examples:
      plughost runner-credentials new gpu-box --plugin author.image-tools==1.2.0 \\
          --grant tools.call --out gpu-box.json --config plughost.toml
      plughost runner-credentials new ocr-box --pin plugins/author.ocr \\
          --out ocr-box.json --config plughost.toml --endpoint tcp://host.example:7700
    """
    from plughost.cli.pinning import pin_folder
    from plughost.remote.keys import AllowEntry, RemoteKeyStore

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
    """Revoke credential NAME: refused from now on, and a connected runner is cut off.

    Exits 1 when there is no credential of that name.

    \b
    Example:
      plughost runner-credentials revoke gpu-box --config plughost.toml
    """
    from plughost.remote.keys import RemoteKeyStore

    keys_dir, _ = _remote_settings(config_file)
    if not RemoteKeyStore(keys_dir).revoke(name):
        click.echo(f"no credential named {name} in {keys_dir}", err=True)
        sys.exit(1)
    click.echo(f"credential {name} revoked")


@runner_credentials.command("list")
@_config_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object for scripts.")
def list_credentials(config_file: Path | None, as_json: bool) -> None:
    """List the live credentials: the plugins each may serve and the capabilities granted.

    \b
    Examples:
      plughost runner-credentials list --config plughost.toml
      plughost runner-credentials list --config plughost.toml --json
    """
    from plughost.remote.keys import RemoteKeyStore

    keys_dir, _ = _remote_settings(config_file)
    credentials = RemoteKeyStore(keys_dir).credentials()
    if as_json:
        rows = [
            {
                "name": credential.name,
                "plugins": [_entry_row(entry) for entry in credential.allow],
                "grants": list(credential.grants),
            }
            for credential in credentials
        ]
        click.echo(json.dumps({"keys_dir": str(keys_dir), "credentials": rows}, indent=2))
        return
    if not credentials:
        click.echo(f"no credentials in {keys_dir}", err=True)
    for credential in credentials:
        grants = f" (grants {', '.join(credential.grants)})" if credential.grants else ""
        click.echo(f"{credential.name}: {', '.join(str(e) for e in credential.allow)}{grants}")


def _entry_row(entry: AllowEntry) -> dict[str, str | None]:
    """An allow-list entry for ``--json``: empty parts as null (any version, any files)."""
    return {
        "plugin_id": entry.plugin_id,
        "version": entry.version or None,
        "sha256": entry.plugin_sha256 or None,
    }
