"""The MCP server through the SDK's client: app/mcp/ (server.py, groups.py, served_groups.py,
tools/) over HTTP and `engram mcp` over stdio; the export a page at a time
(app/services/export_pages.py)."""
