"""``[search]`` in the serve configuration reaches the host's tool search."""

from __future__ import annotations

from pathlib import Path

from plughost.cli.serve import register_host_tools
from plughost.cli.serve_config import ServeConfig
from plughost.host import PluginHost


def test_the_search_table_chooses_the_ranking_and_a_cache_beside_the_file(
    tmp_path: Path,
) -> None:
    file = tmp_path / "plughost.toml"
    file.write_text('[search]\nsemantic = "off"\nembedding_cache = "cache/embeddings"\n')

    config = ServeConfig.load(file)
    host = PluginHost([])
    register_host_tools(host, config)

    assert config.search.embedding_cache == tmp_path / "cache" / "embeddings"
    assert host.search is not None and host.search.semantic is False
