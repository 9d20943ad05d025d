"""Small MCP servers and a plughost launcher, run as real subprocesses by the MCP tests."""
