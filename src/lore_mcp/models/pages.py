"""What reading and writing a page returns: the page with its links and backlinks, a
save, a delete, a rename, and the kept versions of a page file."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lore_mcp.models.base import Budgeted, Lean


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
