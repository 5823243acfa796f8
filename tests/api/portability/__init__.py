"""Export and import: app/services/portability.py and export_snapshot.py,
app/repositories/portability.py (the export a page at a time, for MCP: tests/api/mcp/)."""
