"""What the repository promises: the OpenAPI document, MCP coverage, docs links, packaging,
code style, the tests' layout."""
