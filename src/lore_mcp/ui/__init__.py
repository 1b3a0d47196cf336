"""The third door: a local web app for people, onto the vault their agents keep.

It shows pages rendered from their Markdown, the link graph, and the audit log as a
timeline of changes, each with its diff and a restore of any kept version. It reads
through the engine and writes only through it (a restore is `save_page(mode="restore")`),
on the loopback address, behind a random token. `lore ui` starts it.
"""

from lore_mcp.ui.app import build_app, new_token, serve

__all__ = ["build_app", "new_token", "serve"]
