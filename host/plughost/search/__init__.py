"""Deferred tool discovery: ``tool_search`` over BM25 of jieba tokens, fused with embeddings.

Lives here: tokenization (``text``), the incremental BM25 index (``index``), the
optional embedding model (``embedding``) and the vectors kept and cached beside
the BM25 index (``dense``), the tools conversations use together (``co_usage``), the
immutable core/deferred catalog (``catalog``), per-conversation discovery state
(``discovery``), the provider-specific strategies (``strategies``), the
``tool_hint`` reminder (``hints``) and the ``ToolSearchService`` that ties them to
a registry (``service``).

May import: ``plughost.tools`` and the leaf modules. Never plugins, runners or MCP.
"""
