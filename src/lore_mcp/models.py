"""What every vault operation returns: pydantic models.

The same models are the MCP tools' output schemas and the CLI's `--json` output, so
the doors cannot drift apart.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


def _lean(schema: dict[str, Any]) -> None:
    """Keep a result's JSON schema to what a client validates with: the types of the
    fields and how they nest, without titles, descriptions, defaults or the list of
    required fields (every result has them all; a client checks the types of what
    comes). Every session pays for the tools' output schemas in its context; the fields
    are explained in the tools' descriptions and the text the model reads."""
    for noise in ("title", "description", "required"):
        schema.pop(noise, None)

    for field in schema.get("properties", {}).values():
        for noise in ("title", "description", "default"):  # a default validates nothing
            field.pop(noise, None)
        either = field.get("anyOf")
        if (  # `X or null` as one type list, as JSON Schema allows: the same check, shorter
            isinstance(either, list)
            and len(either) == 2
            and {"type": "null"} in either
            and all(set(t) == {"type"} for t in either)
        ):
            del field["anyOf"]
            field["type"] = [t["type"] for t in either if t != {"type": "null"}] + ["null"]


class Lean(BaseModel):
    """A result model whose JSON schema is lean (see `_lean`)."""

    model_config = ConfigDict(json_schema_extra=_lean)


class Budgeted(Lean):
    """A tool result that may be shrunk to fit the server's result size limit."""

    truncated: bool = Field(
        default=False,
        description="Shrunk to fit the result size limit; the note says how to get the rest",
    )
    note: str | None = Field(
        default=None, description="What was left out to fit the size limit, and how to get it"
    )


class Paged(Budgeted):
    """A result that shows one page of a longer list: call again with `next_offset` as
    `offset` for the next rows. Counts are of the whole list, not of the rows shown."""

    offset: int = Field(default=0, description="Rows skipped")
    next_offset: int | None = Field(
        default=None, description="The offset of the next rows; null: none left"
    )


class PageRef(Lean):
    """A page or placeholder by slug (its name for tools) and title."""

    slug: str
    title: str


class OutgoingLink(Lean):
    """One `[[link]]` in a page."""

    target: str = Field(description="The target as written in the page")
    slug: str = Field(description="The page or placeholder it resolves to")
    exists: bool = Field(description="False when the target is a placeholder (no file yet)")
    line: int = Field(description="1-based line of the link")
    ambiguous: bool = Field(
        default=False, description="Several pages matched; one was chosen as Obsidian chooses"
    )
    loose: bool = Field(
        default=False,
        description="Only the slug form found the page: Obsidian will not follow this link",
    )
    note: str | None = Field(default=None, description="The link to write instead, and why")


class PageVersion(Lean):
    """A kept version of a page file."""

    number: int = Field(description="1 is the newest")
    time: str = Field(description="When it was kept (UTC, ISO 8601)")
    tool: str = Field(description="The write that replaced it")
    door: str = Field(description="mcp, cli or api")
    size: int
    hash: str = Field(description="sha256 of its bytes")
    kept: str = Field(description="Where its bytes are, vault-relative")


class PageView(Budgeted):
    """A page as read: its Markdown plus where it sits in the link graph."""

    slug: str
    title: str
    path: str | None = Field(description="Vault-relative file path; null for a placeholder")
    content: str = Field(
        description="The page's text exactly as in its file (a byte-order mark included), "
        "from line offset+1, column column+1; empty for a placeholder"
    )
    offset: int = Field(default=0, description="Lines skipped: content starts at line offset+1")
    column: int = Field(
        default=0, description="Characters of line offset+1 skipped before content starts"
    )
    total_lines: int = Field(default=0, description="Lines in the whole page")
    next_offset: int | None = Field(
        default=None,
        description="Pass as offset (with next_column as column) to read the next part; null "
        "when content runs to the end",
    )
    next_column: int | None = Field(default=None, description="Pass as column to read on")
    parts: int = Field(
        default=1,
        description="How many reads it takes from offset and column to the end, this one "
        "included; joined, the parts are the file's text exactly",
    )
    encoding_errors: bool = Field(
        default=False,
        description="The file is not valid UTF-8: content shows each byte that does not "
        "decode as U+FFFD; a replace save writes the text as given (the history keeps "
        "the old bytes), the other save modes refuse the page",
    )
    is_placeholder: bool
    backlinks: list[PageRef] = Field(description="Pages that link here")
    backlink_count: int | None = Field(
        default=None,
        description="How many pages link here in all (backlinks may list fewer, to fit)",
    )
    links: list[OutgoingLink] = Field(description="Links in this page, in order")
    link_count: int | None = Field(
        default=None, description="Links on the lines shown, in all (links may list fewer)"
    )
    matched_by: Literal["path", "title", "placeholder", "alias", "slug"] = Field(
        default="path",
        description="How the name found the page: its path (or slug), its file name, a "
        "placeholder, an alias, or the slug form of the name (loosest)",
    )
    alternatives: list[str] = Field(
        default_factory=list,
        description="Other files the name could have meant (paths), when several match",
    )
    properties: dict[str, Any] = Field(
        default_factory=dict, description="The frontmatter's properties (YAML), parsed"
    )
    aliases: list[str] = Field(default_factory=list, description="Other names of the page")
    tags: list[str] = Field(
        default_factory=list, description="Its tags, from frontmatter and inline #tags"
    )
    hash: str | None = Field(
        default=None,
        description="sha256 of the file's bytes; pass it as expected_hash to a write so the "
        "write fails if the page changed since; null for a placeholder. With version: the "
        "kept version's",
    )
    kept_versions: int = Field(
        default=0,
        description="How many earlier versions of the page the history keeps (1 is the "
        "newest): read one with version=N, bring it back with save_page(mode='restore', "
        "version=N)",
    )
    version: PageVersion | None = Field(
        default=None,
        description="Set when a kept version was read (content is its text): which one, "
        "when it was kept, and which tool and door replaced it",
    )

    @property
    def last_line(self) -> int:
        """The last line the content shows, whole or in part (1-based)."""
        if self.next_offset is None:
            return self.total_lines
        return self.next_offset + (1 if self.next_column else 0)


class SaveResult(Budgeted):
    """What a save did."""

    slug: str
    title: str
    path: str
    created: bool = Field(description="A new file was created")
    promoted: bool = Field(description="A placeholder became a real page")
    unchanged: bool = Field(default=False, description="The content was already identical")
    mode: str = Field(
        default="replace", description="How it was saved: replace, append, prepend, edit, section"
    )
    hash: str = Field(default="", description="sha256 of the file's bytes now")
    history_path: str | None = Field(
        default=None, description="Where the version it replaced is kept (.lore/history/)"
    )
    links: list[OutgoingLink]
    placeholders_created: list[str]
    placeholders_removed: list[str]


class DeleteResult(Budgeted):
    """What a delete did."""

    slug: str
    path: str
    history_path: str = Field(
        description="Where the file's last version is kept, under .lore/history/ "
        "(lore restore brings it back)"
    )
    became_placeholder: bool = Field(description="Other pages still link here")
    placeholders_created: list[str]
    placeholders_removed: list[str]


class RetargetedLink(Lean):
    """A link whose target changed with a rename without being rewritten: it led to
    nothing (a placeholder) and now leads to the renamed page."""

    source: str = Field(description="Slug of the page holding the link")
    line: int
    target: str = Field(description="The target as written")
    before: str = Field(description="Where it led before")
    after: str = Field(description="Where it leads now")


class RenameResult(Budgeted):
    """What a rename did."""

    old_slug: str
    slug: str
    title: str
    path: str
    rewritten: list[str] = Field(description="The first pages whose links were rewritten")
    pages_rewritten: int = Field(default=0, description="Pages rewritten, in all")
    links_rewritten: int
    retargeted: list[RetargetedLink] = Field(
        default_factory=list,
        description="The first links that now lead here without being rewritten",
    )
    retargeted_count: int = Field(default=0, description="Such links, in all")


class PageHistory(Lean):
    """The kept versions of a page file, newest first."""

    path: str
    versions: list[PageVersion]


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


class SyncReport(Lean):
    """What an index pass found and did."""

    pages: int
    placeholders: int
    links: int
    added: int
    updated: int
    removed: int
    unchanged: int
    skipped: list[str] = Field(description="Files not indexed, with the reason")
    seconds: float


class LinkSite(Lean):
    """Where a link is written."""

    source: str = Field(description="Slug of the page holding the link")
    path: str = Field(description="Vault-relative file of that page")
    line: int
    target: str = Field(description="The target as written")


class Unresolved(Lean):
    """A placeholder and the links that lead to it."""

    slug: str
    title: str
    links: list[LinkSite]


class AmbiguousLink(LinkSite):
    """A link that matched several pages; `resolved` is the one chosen."""

    resolved: str
    candidates: list[str]


class LooseLink(LinkSite):
    """A link Obsidian will not follow (only its slug form, or an alias, names a page),
    and the link to write instead."""

    resolved: str = Field(description="The page it names loosely")
    write: str = Field(description="The link to write, which Obsidian follows")


class PageFile(Lean):
    slug: str
    path: str


class UnindexedFile(Lean):
    path: str
    reason: str


class DoctorReport(Lean):
    """The vault's health: errors first, then warnings."""

    vault: str
    pages: int
    placeholders: int
    links: int = Field(description="Links written in pages (every occurrence)")
    invalid_utf8: list[PageFile]
    unindexed: list[UnindexedFile]
    unresolved: list[Unresolved]
    ambiguous: list[AmbiguousLink]
    ignored: int = Field(
        default=0,
        description="Files and folders a .gitignore or .loreignore leaves out of the vault",
    )
    loose: list[LooseLink] = Field(
        default_factory=list, description="Links Obsidian will not follow, with what to write"
    )
    orphans: list[PageFile]
    broken_properties: list[UnindexedFile] = Field(
        default_factory=list, description="Pages whose frontmatter is not YAML that parses"
    )
    too_many_links: list[UnindexedFile] = Field(
        default_factory=list,
        description="Pages with more links than one page may have indexed: the later ones are not",
    )
    history_versions: int = Field(default=0, description="Page versions kept in .lore/history/")
    history_bytes: int = Field(default=0, description="Their size")
    unfinished_write: str | None = Field(
        default=None,
        description="A write (a rename, say) a killed process left part-way, which the next "
        "start that may write finishes or undoes",
    )
    errors: int = Field(description="Invalid UTF-8 and unindexed files, an unfinished write")
    warnings: int = Field(
        description="Placeholders, ambiguous and loose links, orphans, frontmatter that "
        "does not parse and pages with too many links"
    )
