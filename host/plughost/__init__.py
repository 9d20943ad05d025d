"""plughost: a multi-process plugin host for LLM tools."""
