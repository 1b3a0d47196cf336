"""The engine: every operation on a vault. The MCP server, the `lore` command line, the
watcher and the tests all come through here, so the doors cannot drift apart."""

from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.doctor import doctor
from lore_mcp.vault_ops.open import (
    apply_external_changes,
    changed_on_disk,
    index_vault,
    open_vault,
    resync,
)
from lore_mcp.vault_ops.pages import delete_page, read_page, read_source, save_page
from lore_mcp.vault_ops.queries import get_backlinks, get_graph, list_pages, search, search_titles
from lore_mcp.vault_ops.rename import rename_page
from lore_mcp.vault_ops.versions import (
    page_history,
    read_page_or_version,
    read_version,
    restore_page,
    save_or_restore,
    version_source,
)

__all__ = [
    "AppState",
    "apply_external_changes",
    "changed_on_disk",
    "delete_page",
    "doctor",
    "get_backlinks",
    "get_graph",
    "index_vault",
    "list_pages",
    "open_vault",
    "page_history",
    "read_page",
    "read_page_or_version",
    "read_source",
    "read_version",
    "rename_page",
    "restore_page",
    "resync",
    "save_or_restore",
    "save_page",
    "search",
    "search_titles",
    "version_source",
]
