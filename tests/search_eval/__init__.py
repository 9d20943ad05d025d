"""The labeled tool-search evaluation set (tools and queries) and its loaders."""
