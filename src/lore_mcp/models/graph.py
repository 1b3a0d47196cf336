"""What the link graph returns: a page's neighbourhood, or the vault's shape."""

from __future__ import annotations

from pydantic import Field

from lore_mcp.models.base import Lean, Paged


class GraphNode(Lean):
    slug: str
    title: str
    is_placeholder: bool
    depth: int = Field(description="Hops from the centre page")


class GraphEdge(Lean):
    source: str
    target: str


class Neighbourhood(Lean):
    """The pages within `depth` links of a page, in either direction, nearest first."""

    center: str
    depth: int
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    node_count: int = Field(default=0, description="Pages, in all")
    edge_count: int = Field(default=0, description="Links, in all")


class LinkedCount(Lean):
    slug: str
    title: str
    count: int


class VaultShape(Lean):
    """The vault at a glance."""

    pages: int
    placeholders: int
    links: int = Field(description="Distinct page-to-page edges")
    orphans: list[str] = Field(description="Pages with no links in or out")
    orphan_count: int
    unreferenced: list[str] = Field(
        default_factory=list,
        description="Pages no other page links to, whatever they link to",
    )
    unreferenced_count: int = 0
    most_linked: list[LinkedCount] = Field(description="Pages, by how many pages link there")
    most_linked_count: int = Field(default=0, description="Pages linked to, in all")
    unresolved: list[LinkedCount] = Field(description="Placeholders, by how many pages link there")
    unresolved_count: int = Field(default=0, description="Placeholders linked to, in all")


class GraphResult(Paged):
    """Either a neighbourhood (when a slug was given) or the vault's shape."""

    neighbourhood: Neighbourhood | None = None
    shape: VaultShape | None = None
    other_vaults: list[str] = Field(
        default_factory=list, description="The shape's: the server's other vaults, by name"
    )
