"""MCP (Model Context Protocol) over Streamable HTTP at /mcp, its tools and the stdio bridge.

The tools (tools/, one module per domain) are a second front door to the same services as
the REST routers: each call runs in one transaction, builds the same request models and maps
rows with app/responses/.
"""
