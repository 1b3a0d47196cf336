"""The SQLite index in `<vault>/.lore/`: pages, links and full-text search, a cache of
the files that every process serving the vault shares."""

from lore_mcp.index.db import Index, Patience
from lore_mcp.index.links import LinkRow
from lore_mcp.index.pages import FileStamp, PageRow
from lore_mcp.index.repair import is_damage
from lore_mcp.index.schema import last_page_count
from lore_mcp.index.search import SearchRow, SearchText, search_text

__all__ = [
    "FileStamp",
    "Index",
    "LinkRow",
    "PageRow",
    "Patience",
    "SearchRow",
    "SearchText",
    "is_damage",
    "last_page_count",
    "search_text",
]
