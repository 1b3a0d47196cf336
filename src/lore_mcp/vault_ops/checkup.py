"""`lore doctor`: what is wrong, or worth a look, in an indexed vault.

Errors: files that are not valid UTF-8, page files the index could not take in (and
why: too large, unreadable, a symlink leading out of the vault, a name another file
shows as), a write a killed process left part-way (a vault opened read-only leaves it).
Warnings: placeholders (with the links that lead to them), ambiguous links
and how they resolved, links Obsidian will not follow (loose ones and bare aliases)
with the link to write instead, orphan pages, frontmatter that does not parse (or
would cost too much: YAML aliases), pages with more links than are indexed.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path

from lore_mcp import frontmatter
from lore_mcp.config import MAX_FILE_BYTES, MAX_PAGE_LINKS
from lore_mcp.index import LinkRow, PageRow
from lore_mcp.models import (
    AmbiguousLink,
    DoctorReport,
    LinkSite,
    LooseLink,
    PageFile,
    UnindexedFile,
    Unresolved,
)
from lore_mcp.slugs import Key
from lore_mcp.vault_ops import history, recovery
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import scan_files
from lore_mcp.vault_ops.ignore import Ignores
from lore_mcp.vault_ops.open import reading
from lore_mcp.vault_ops.pagefile import decode, read_regular, unreadable
from lore_mcp.vault_ops.paths import real_path
from lore_mcp.vault_ops.read import link_advice


def doctor(vault: AppState) -> DoctorReport:
    """The vault's health: undecodable and unindexable files (errors); placeholders,
    ambiguous and loose links and orphans (warnings)."""
    with reading(vault):
        return _diagnose(vault)


def _diagnose(vault: AppState) -> DoctorReport:
    pages = vault.index.pages.all()
    links = sorted(vault.index.links.all(), key=lambda k: (k.source, k.line, k.id))
    orphans = vault.graph.orphans()
    titles = {p.key: p.title for p in pages}
    sites: dict[str, list[LinkSite]] = defaultdict(list)
    for link in links:
        if link.resolved in vault.placeholders:
            sites[link.resolved].append(_site(vault, link))
    ambiguous = [
        AmbiguousLink(
            **_site(vault, link).model_dump(),
            resolved=vault.handle(link.resolved),
            candidates=_candidates(vault, link),
        )
        for link in links
        if link.ambiguous
    ]
    loose = [
        LooseLink(**_site(vault, link).model_dump(), resolved=vault.handle(found), write=advice)
        for link in links
        if (advice := link_advice(vault, link)) is not None
        and (found := link.resolved if link.loose else vault.aliases.pages(link.key)[0])
    ]
    invalid = [
        PageFile(slug=vault.handle(p.key), path=p.path) for p in pages if p.bad_utf8 and p.path
    ]
    left_out: list[str] = []
    unindexed = _unindexed(vault.root, pages, vault.ignores, left_out)
    unfinished = recovery.pending(vault.root)
    versions, kept_bytes = history.size(vault.root)
    broken = _broken_properties(vault, pages)
    crowded = _too_many_links(links)
    unresolved = [
        Unresolved(slug=vault.handle(key), title=titles.get(key, key), links=found)
        for key, found in sites.items()
    ]
    return DoctorReport(
        vault=str(vault.root),
        pages=sum(1 for p in pages if not p.is_placeholder),
        placeholders=sum(1 for p in pages if p.is_placeholder),
        links=len(links),
        invalid_utf8=sorted(invalid, key=lambda f: f.path),
        unindexed=unindexed,
        unresolved=sorted(unresolved, key=lambda u: u.slug),
        ambiguous=ambiguous,
        loose=loose,
        ignored=len(left_out),
        orphans=[PageFile(slug=vault.handle(s), path=s) for s in orphans],
        broken_properties=broken,
        too_many_links=crowded,
        history_versions=versions,
        history_bytes=kept_bytes,
        unfinished_write=unfinished,
        errors=len(invalid) + len(unindexed) + (unfinished is not None),
        warnings=len(unresolved)
        + len(ambiguous)
        + len(loose)
        + len(orphans)
        + len(broken)
        + len(crowded),
    )


def _candidates(vault: AppState, link: LinkRow) -> list[str]:
    """The files an ambiguous link could mean."""
    key = Key(link.key, link.exact, link.fold)
    found = vault.pages.at(key.path) or ([] if key.exact else vault.pages.ending(key.path))
    return found or vault.pages.slugged(key.fold, exact=key.exact)


def _broken_properties(vault: AppState, pages: list[PageRow]) -> list[UnindexedFile]:
    """Pages whose frontmatter is not YAML that parses: they have no properties."""
    found = []
    for row in sorted(pages, key=lambda r: r.path or ""):
        path = real_path(vault.root, row.path) if row.path else None
        try:
            data = (read_regular(path)[1] or b"") if path else b""
        except OSError:
            continue
        if data.lstrip(b"\xef\xbb\xbf").startswith(b"---"):
            problem = frontmatter.split(decode(data)[0].removeprefix("\ufeff")).error
            if problem:
                found.append(UnindexedFile(path=row.path or "", reason=problem))
    return found


def _too_many_links(links: list[LinkRow]) -> list[UnindexedFile]:
    """Pages holding as many indexed links as one page may (see `MAX_PAGE_LINKS`): the
    links they hold after those are not in the index or the graph."""
    counts = Counter(link.source for link in links)
    reason = f"it holds {MAX_PAGE_LINKS} links or more: only the first {MAX_PAGE_LINKS} are indexed"
    return [
        UnindexedFile(path=p, reason=reason)
        for p, n in sorted(counts.items())
        if n >= MAX_PAGE_LINKS
    ]


def _site(vault: AppState, link: LinkRow) -> LinkSite:
    return LinkSite(
        source=vault.handle(link.source), path=link.source, line=link.line, target=link.target
    )


def _unindexed(
    root: Path, pages: list[PageRow], ignores: Ignores, left_out: list[str]
) -> list[UnindexedFile]:
    """Page files on disk that are not indexed, and the files a pass over the vault
    skips (see `scan_files`), with why; what the ignore files leave out goes to
    `left_out`."""
    known = {p.path for p in pages if p.path}
    reasons: dict[str, str] = {}
    found = scan_files(root, warn=False, skipped=reasons, ignores=ignores, ignored=left_out)

    for rel, st in found.items():
        if rel in known:
            continue
        if st.size > MAX_FILE_BYTES:
            reasons[rel] = f"larger than the {MAX_FILE_BYTES // (1024 * 1024)} MB limit"
        else:
            reasons[rel] = unreadable(root, rel) or "it could not be read"
    return [UnindexedFile(path=rel, reason=why) for rel, why in sorted(reasons.items())]
