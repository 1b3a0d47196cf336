"""lore-mcp: a wiki vault as persistent memory for AI agents, served over MCP."""

__version__ = "0.2.0"
