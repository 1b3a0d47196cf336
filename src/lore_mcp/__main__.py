"""`python -m lore_mcp`: the same as the `lore-mcp` command."""

from lore_mcp.cli import mcp_main

if __name__ == "__main__":
    mcp_main()
