"""The `lore-mcp` and `lore` commands' entry points, which import the command line only
when called.

A command's script imports its entry point's module before it calls it, and so does each
reader process that a pass over many files starts: such a process runs the imports of
the script that started the server again (Python's `spawn` start method), then reads
pages. With the entry points here, it loads only what reading pages needs (about 44 MB,
where `lore_mcp.cli` with the SDK and pydantic would make it about 66 MB).
"""

from __future__ import annotations


def mcp_main() -> None:
    """The `lore-mcp` command (`lore_mcp.cli.mcp_main`)."""
    from lore_mcp.cli import mcp_main as run

    run()


def lore_main() -> None:
    """The `lore` command (`lore_mcp.cli.lore_main`)."""
    from lore_mcp.cli import lore_main as run

    run()
