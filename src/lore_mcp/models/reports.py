"""What an index pass and the doctor report: counts, and the files and links that need
a look."""

from __future__ import annotations

from pydantic import Field

from lore_mcp.models.base import Lean


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
