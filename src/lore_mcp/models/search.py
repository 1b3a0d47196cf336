"""What finding pages returns: the listing, full-text and title search, and the lines
that link to a page or mention it."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from lore_mcp.models.base import Lean, Paged


class PageSummary(Lean):
    """One row of a listing."""

    slug: str
    title: str
    is_placeholder: bool
    links_out: int = Field(description="Distinct pages this page links to")
    links_in: int = Field(description="Distinct pages linking here")
    modified: str | None = Field(
        default=None,
        description="When the file was last modified (ISO 8601, UTC); null for a placeholder",
    )


class PageList(Paged):
    """A page of the sorted listing."""

    sort: Literal["slug", "modified"] = Field(
        default="slug", description="slug: by slug; modified: the latest modified first"
    )
    pages: list[PageSummary]
    total: int = Field(description="How many pages match in all")


class SearchHit(Lean):
    """A full-text match."""

    slug: str
    title: str
    snippet: str = Field(
        description="The passage with the most query words, matches marked **like this**; "
        "empty when left out to fit"
    )
    score: float = Field(
        description="Relevance, higher is better: above 1 when the page holds every word of "
        "the query that counts (question words, articles and such aside), below 1 otherwise"
    )


class SearchResults(Paged):
    """Full-text search results, best first."""

    query: str
    hits: list[SearchHit]
    total: int = Field(default=0, description="Hits found (at most limit)")


class TitleMatch(Lean):
    """A title or slug match."""

    slug: str
    title: str
    is_placeholder: bool
    match: Literal["exact", "prefix", "substring", "fuzzy"]


class TitleMatches(Paged):
    """Title matches: exact first, then prefix, substring and close spellings."""

    query: str
    matches: list[TitleMatch]
    total: int = Field(default=0, description="Matches, in all")


class Backlink(Lean):
    """A line in another page that links here, or mentions this page's title."""

    slug: str
    title: str
    line: int
    text: str = Field(description="The line's text")
    links: int = Field(
        default=1, description="How many links to the page the line holds (0: a mention)"
    )


class Backlinks(Paged):
    """Who links to a page, then (optionally) who mentions it without linking."""

    slug: str
    title: str
    linked: list[Backlink]
    unlinked: list[Backlink] | None = Field(
        default=None, description="Plain-text mentions; only when include_unlinked was set"
    )
    total: int = Field(default=0, description="Linking lines, in all")
    linking_pages: int = Field(default=0, description="Linking pages, in all")
    links: int = Field(default=0, description="Links here, in all")
    unlinked_total: int | None = Field(
        default=None, description="Mentioning lines, in all (of 200 pages holding the name)"
    )
