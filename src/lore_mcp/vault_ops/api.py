"""Every operation on a vault, as the engine's package gives them (see its docstring):
each heals an index SQLite finds damaged, and runs again."""

from lore_mcp.vault_ops import checkup, export, queries, read, rename, versions, write
from lore_mcp.vault_ops.core import AppState, last_index_count
from lore_mcp.vault_ops.export import ExportGraph, ExportNode
from lore_mcp.vault_ops.heal import heals
from lore_mcp.vault_ops.open import (
    apply_external_changes,
    changed_on_disk,
    index_vault,
    open_vault,
    resync,
)

# Every operation a door calls heals an index SQLite finds damaged, and runs again.
doctor = heals(checkup.doctor)
delete_page = heals(write.delete_page)
read_page = heals(read.read_page)
read_source = heals(read.read_source)
save_page = heals(write.save_page)
get_backlinks = heals(queries.get_backlinks)
get_graph = heals(queries.get_graph)
export_graph = heals(export.export_graph)
list_pages = heals(queries.list_pages)
search = heals(queries.search)
search_titles = heals(queries.search_titles)
rename_page = heals(rename.rename_page)
page_history = heals(versions.page_history)
read_page_or_version = heals(versions.read_page_or_version)
read_version = heals(versions.read_version)
restore_page = heals(versions.restore_page)
save_or_restore = heals(versions.save_or_restore)
version_source = heals(versions.version_source)

__all__ = [
    "AppState",
    "ExportGraph",
    "ExportNode",
    "apply_external_changes",
    "changed_on_disk",
    "delete_page",
    "doctor",
    "export_graph",
    "get_backlinks",
    "get_graph",
    "index_vault",
    "last_index_count",
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
