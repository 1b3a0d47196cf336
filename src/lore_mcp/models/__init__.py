"""What every vault operation returns: pydantic models.

The same models are the MCP tools' output schemas and the CLI's `--json` output, so
the doors cannot drift apart. They are imported from here; each family has its module:
`base` (lean schemas, the fields of a result that may be shrunk or paged), `pages`
(reading and writing a page), `search` (listing and finding pages), `graph` (the link
graph) and `reports` (an index pass, the doctor).
"""

from lore_mcp.models.base import Budgeted, Lean, Paged
from lore_mcp.models.graph import (
    GraphEdge,
    GraphNode,
    GraphResult,
    LinkedCount,
    Neighbourhood,
    VaultShape,
)
from lore_mcp.models.pages import (
    DeleteResult,
    OutgoingLink,
    PageHistory,
    PageRef,
    PageVersion,
    PageView,
    RenameResult,
    RetargetedLink,
    SaveResult,
)
from lore_mcp.models.reports import (
    AmbiguousLink,
    DoctorReport,
    LinkSite,
    LooseLink,
    PageFile,
    SyncReport,
    UnindexedFile,
    Unresolved,
)
from lore_mcp.models.search import (
    Backlink,
    Backlinks,
    PageList,
    PageSummary,
    SearchHit,
    SearchResults,
    TitleMatch,
    TitleMatches,
)

__all__ = [
    "AmbiguousLink",
    "Backlink",
    "Backlinks",
    "Budgeted",
    "DeleteResult",
    "DoctorReport",
    "GraphEdge",
    "GraphNode",
    "GraphResult",
    "Lean",
    "LinkSite",
    "LinkedCount",
    "LooseLink",
    "Neighbourhood",
    "OutgoingLink",
    "PageFile",
    "PageHistory",
    "PageList",
    "PageRef",
    "PageSummary",
    "PageVersion",
    "PageView",
    "Paged",
    "RenameResult",
    "RetargetedLink",
    "SaveResult",
    "SearchHit",
    "SearchResults",
    "SyncReport",
    "TitleMatch",
    "TitleMatches",
    "UnindexedFile",
    "Unresolved",
    "VaultShape",
]
