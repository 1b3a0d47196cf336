"""`lore doctor`: what is wrong, or worth a look, in an indexed vault.

Errors: slug collisions, files that are not valid UTF-8, page files the index could not
take in (and why: too large, unreadable, a symlink leading out of the vault, a name
another file shows as). Warnings: placeholders (with the links that lead to them),
ambiguous links and how they resolved, orphan pages.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from lore_mcp import frontmatter
from lore_mcp.config import MAX_FILE_BYTES
from lore_mcp.index import LinkRow, PageRow
from lore_mcp.models import (
    AmbiguousLink,
    DoctorReport,
    LinkSite,
    PageFile,
    SlugCollision,
    UnindexedFile,
    Unresolved,
)
from lore_mcp.slugs import Key, slug_from_path
from lore_mcp.vault_ops import history
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import decode, read_regular, scan_files, unreadable
from lore_mcp.vault_ops.open import reading
from lore_mcp.vault_ops.paths import real_path


def doctor(vault: AppState) -> DoctorReport:
    """The vault's health: collisions, undecodable and unindexable files (errors);
    placeholders, ambiguous links and orphans (warnings)."""
    with reading(vault):
        return _diagnose(vault)


def _diagnose(vault: AppState) -> DoctorReport:
    pages = vault.index.pages.all()
    links = sorted(vault.index.links.all(), key=lambda k: (k.source, k.line, k.id))
    shadowed = vault.index.pages.shadowed()
    orphans = vault.graph.orphans()
    paths = {p.slug: p.path or "" for p in pages}
    titles = {p.slug: p.title for p in pages}
    sites: dict[str, list[LinkSite]] = defaultdict(list)
    for link in links:
        if link.resolved in vault.placeholders:
            sites[link.resolved].append(_site(link, paths))
    ambiguous = [
        AmbiguousLink(
            **_site(link, paths).model_dump(),
            resolved=link.resolved,
            candidates=vault.pages.matches(Key(link.key, link.exact)),
        )
        for link in links
        if link.ambiguous
    ]
    collisions = [SlugCollision(slug=s, kept=paths.get(s), shadowed=p) for p, s in shadowed]
    invalid = [PageFile(slug=p.slug, path=p.path) for p in pages if p.bad_utf8 and p.path]
    unindexed = _unindexed(vault.root, pages, shadowed)
    versions, kept_bytes = history.size(vault.root)
    broken = _broken_properties(vault, pages)
    unresolved = [Unresolved(slug=s, title=titles.get(s, s), links=v) for s, v in sites.items()]
    return DoctorReport(
        vault=str(vault.root),
        pages=sum(1 for p in pages if not p.is_placeholder),
        placeholders=sum(1 for p in pages if p.is_placeholder),
        links=len(links),
        collisions=collisions,
        invalid_utf8=sorted(invalid, key=lambda f: f.path),
        unindexed=unindexed,
        unresolved=sorted(unresolved, key=lambda u: u.slug),
        ambiguous=ambiguous,
        orphans=[PageFile(slug=s, path=paths.get(s, "")) for s in orphans],
        broken_properties=broken,
        history_versions=versions,
        history_bytes=kept_bytes,
        errors=len(collisions) + len(invalid) + len(unindexed),
        warnings=len(unresolved) + len(ambiguous) + len(orphans) + len(broken),
    )


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


def _site(link: LinkRow, paths: dict[str, str]) -> LinkSite:
    return LinkSite(
        source=link.source, path=paths.get(link.source, ""), line=link.line, target=link.target
    )


def _unindexed(
    root: Path, pages: list[PageRow], shadowed: list[tuple[str, str]]
) -> list[UnindexedFile]:
    """Page files on disk that are neither indexed nor shadowed by a collision, and the
    files a pass over the vault skips (see `scan_files`), with why."""
    known = {p.path for p in pages if p.path} | {path for path, _ in shadowed}
    reasons: dict[str, str] = {}
    found = scan_files(root, warn=False, skipped=reasons)
    for rel, st in found.items():
        if rel in known:
            continue
        if not slug_from_path(rel):
            reasons[rel] = "the name has no letters or digits"
        elif st.size > MAX_FILE_BYTES:
            reasons[rel] = f"larger than the {MAX_FILE_BYTES // (1024 * 1024)} MB limit"
        else:
            reasons[rel] = unreadable(root, rel) or "it could not be read"
    return [UnindexedFile(path=rel, reason=why) for rel, why in sorted(reasons.items())]
