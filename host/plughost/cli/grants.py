"""``plughost grant``: give a plugin or an MCP server network access, in plughost.toml.

The grant goes where the operator keeps the rest of the configuration, never
into the plugin's folder: ``[host.network_grants]`` for a plugin,
``[mcp.servers.NAME] network`` for an MCP server. The file is edited with
tomlkit, so its comments and layout stay as the operator wrote them, and it is
validated as ``plughost serve`` would read it before it is written.

Imports only click at the top, like every command module (see ``main``).
"""

from __future__ import annotations

from pathlib import Path

import click

from plughost.cli.options import json_option, plugins_option

__all__ = ["grant"]


@click.command()
@click.argument("target")
@click.argument("destinations", nargs=-1, required=True)
@click.option(
    "--config",
    "config_file",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("plughost.toml"),
    show_default=True,
    help="The configuration file to write (created if missing).",
)
@click.option("--mcp", "mcp_server", is_flag=True, help="TARGET is an [mcp.servers] name.")
@plugins_option
@json_option
def grant(
    target: str,
    destinations: tuple[str, ...],
    config_file: Path,
    mcp_server: bool,
    plugin_dirs: tuple[Path, ...],
    as_json: bool,
) -> None:
    """Let a plugin (or, with --mcp, an MCP server) reach DESTINATIONS over the network.

    A destination is a host name (ports 80 and 443), NAME:PORT, a wildcard
    (*.example.org, * for any public host), an address (203.0.113.7:5000,
    [2001:db8::1]:443) or localhost:PORT. The refusal messages, the console and
    `plughost serve --learn` print the exact destination to grant. Restart
    serve (or use the console's grant button) for a running host to apply it.

    \b
    Examples:
      plughost grant community.weather api.openweathermap.org
      plughost grant author.crawler '*.example.org' api.example.com:8443
      plughost grant fetch --mcp '*'
      plughost grant internetsb.maizone localhost:9999 --plugins plugins
    """
    from plughost.cli.console import print_json

    try:
        grants = write_grants(
            config_file, target, list(destinations), mcp=mcp_server, plugin_dirs=plugin_dirs
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        print_json(
            {"target": target, "mcp": mcp_server, "network": grants, "config": str(config_file)}
        )
        return
    where = f"[mcp.servers.{target}] network" if mcp_server else f'network_grants."{target}"'
    click.echo(f"{config_file}: {where} = {grants}")
    click.echo("Restart plughost serve to apply it (the console's grant button applies it live).")


def write_grants(
    path: Path,
    target: str,
    destinations: list[str],
    *,
    mcp: bool,
    plugin_dirs: tuple[Path, ...] = (),
) -> list[str]:
    """Add ``destinations`` to ``target``'s grants in ``path``; return its grants now.

    Raises:
        ValueError: a destination that is not a grant, or a file that would not load.
    """
    import tomlkit

    from plughost.cli.serve_config import ConfigFileError, ServeConfig
    from plughost.destinations import parse_destination

    for destination in destinations:
        parse_destination(destination)
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    document = tomlkit.parse(text)
    if mcp:
        servers = document.get("mcp", {}).get("servers", {})
        if target not in servers:
            raise ValueError(f"{path} has no [mcp.servers.{target}]; add the server first")
        table = servers[target]
        key = "network"
    else:
        host = document.setdefault("host", tomlkit.table())
        table = host.setdefault("network_grants", tomlkit.table())
        key = target
        if key not in table:  # naming a plugin replaces its default: keep what it had
            table[key] = _default_grants(path, target, plugin_dirs)
    current = [str(g) for g in table.get(key, [])]
    merged = list(dict.fromkeys([*current, *destinations]))
    table[key] = merged
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(tomlkit.dumps(document), encoding="utf-8")
    try:
        ServeConfig.load(partial)  # as serve would read it: never leave a file it refuses
    except ConfigFileError as exc:
        partial.unlink()
        raise ValueError(str(exc).replace(str(partial), str(path))) from None
    partial.replace(path)
    return merged


def _default_grants(path: Path, plugin_id: str, plugin_dirs: tuple[Path, ...]) -> list[str]:
    """What ``plugin_id`` reaches before the file names it: MaiBot's default, or nothing.

    Found by reading the manifests in the file's ``host.plugin_dirs`` and in
    ``plugin_dirs``.

    Raises:
        ValueError: the plugin is in neither, so its default cannot be known.
    """
    from plughost.cli.serve_config import ConfigFileError, ServeConfig
    from plughost.plugins.source import scan_plugin_dirs
    from plughost.runners.sandbox import network_for
    from plughost.settings import HostSettings

    settings = HostSettings()
    if path.exists():
        try:
            settings = ServeConfig.load(path).host
        except ConfigFileError as exc:
            raise ValueError(str(exc)) from None
    sources, _ = scan_plugin_dirs([*settings.plugin_dirs, *plugin_dirs])
    for source in sources:
        if source.plugin_id == plugin_id:
            return network_for(settings, [source])
    raise ValueError(
        f"no plugin {plugin_id!r} in {path}'s host.plugin_dirs; pass --plugins DIR so its "
        "default grants (public hosts, for a plugin written for MaiBot) are kept"
    )
