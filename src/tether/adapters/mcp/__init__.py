"""The MCP server: six memory tools over stdio or streamable HTTP (`server`, `tools`, `results`).

May import the MCP SDK and the core; never another adapter.
"""
