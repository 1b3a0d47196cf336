"""The instructions a session gets at `initialize`: which vaults, how big, how to use them.

`instructions` says which vault the server holds (or, with several, each that the
caller's grant reaches, its size and which is the default) and then the guide to the
tools: `GUIDE`, or `READ_ONLY_GUIDE` when nothing reached can be written.
"""

from __future__ import annotations

from lore_mcp import vault_ops as engine
from lore_mcp.vault_ops import AppState
from lore_mcp.vaults import EVERYTHING, Grant, Vaults

READ_ONLY_GUIDE = (
    "This server is read-only: it cannot save, delete or rename pages. To recall: search "
    "(full text) or search_titles (names), then read_page; get_graph and get_backlinks "
    "show how pages connect; list_pages browses by folder."
)
GUIDE = (
    "Pages are Markdown files joined by [[wiki links]]. Name a page by slug, title or path "
    "('concepts/link-resolution', 'Link Resolution'); a bare name finds it in any folder. "
    "To recall: search (full text) or search_titles (names), then read_page, which also "
    "shows backlinks and links; get_graph without a slug gives the vault's shape, "
    "get_backlinks and get_graph with a slug show how a page connects. To remember: "
    "save_page writes a whole page, or with mode append, prepend, edit (one exact text) or "
    "section (one heading's body) changes part of it without sending the rest; a "
    "[[link]] to a page that does not exist yet becomes a placeholder that save_page can "
    "fill later. rename_page moves a page and fixes every link to it; delete_page keeps "
    "the file's last version in the history, as every write keeps what it replaces: "
    "read_page with version=N reads one, save_page with mode='restore' puts it back. "
    "list_pages browses by folder."
)


def instructions(vaults: Vaults | AppState, grant: Grant = EVERYTHING) -> str:
    """Which vault, how many pages (as far as the index already knows), and the tools;
    with several vaults, each by name with its size (those `grant` reaches), and which
    is the default. A damaged index leaves the count out: the first index pass rebuilds
    it, and start-up must not wait for that or fail on it."""
    if isinstance(vaults, AppState):
        return _one_vault(vaults)
    reached = [spec for spec in vaults.specs() if grant.reaches(spec.name)]
    if len(vaults.names) == 1:  # opened now, as a server of one vault always did
        return _one_vault(vaults.get())
    if not reached:
        return "This server holds no memory vault this token may reach."
    default = vaults.spec(None, grant).name
    sizes = vaults.page_counts()
    listed = "; ".join(
        f"{spec.name!r} ({sizes[spec.name]}"
        + (", default" if spec.name == default else "")
        + (", read-only" if spec.read_only else "")
        + ")"
        for spec in reached
    )
    read_only = grant.role != "writer" or all(spec.read_only for spec in reached)
    guide = READ_ONLY_GUIDE if read_only else GUIDE
    return (
        f"This server holds {len(reached)} memory vault{'s' * (len(reached) > 1)}: {listed}. "
        "Every tool takes "
        f"vault=NAME; without it a call goes to {default!r}. Results say which "
        f"vault they came from. {guide}"
    )


def _one_vault(vault: AppState) -> str:
    # Counted from the index file on a connection of its own: the vault's own may be
    # rebuilt this moment by a heal in the index thread (a session can start any time).
    pages = 0 if vault.ready.is_set() else engine.last_index_count(vault.root) or 0

    if vault.ready.is_set():
        size = f"{len(vault.pages)} pages"
    elif pages:
        size = f"{pages} pages at its last index; a refresh is running"
    else:
        size = "being indexed now; the first calls wait for it"
    guide = READ_ONLY_GUIDE if vault.read_only else GUIDE
    return f"This is the memory vault {vault.root.name!r} ({size}). {guide}"
