"""Renaming and moving a page, and rewriting the links that pointed at it.

Every file the rename changes is kept in the history first; then the moves and the new
bytes are written down (`journal`) before any file changes, so the rename happens as one.
"""

from __future__ import annotations

from lore_mcp import audit, links
from lore_mcp.errors import InvalidArgumentError, PageExistsError
from lore_mcp.models import RenameResult
from lore_mcp.slugs import (
    SlugSet,
    file_path_for,
    parse_name,
    slug_from_path,
    target_key,
    title_from_path,
)
from lore_mcp.vault import history, journal, names, sync
from lore_mcp.vault.core import Vault
from lore_mcp.vault.files import spelled_on_disk
from lore_mcp.vault.open import writing
from lore_mcp.vault.pages import check_expected, check_inside, read_bytes


def rename_page(
    vault: Vault,
    name: str,
    new_name: str,
    *,
    door: str = "api",
    expected_hash: str | None = None,
) -> RenameResult:
    """Move a page to a new title or `folder/New Title` and rewrite the links that
    pointed at it, in every page. Kept in the history, recorded in the audit log."""
    with writing(vault):
        source = names.existing(vault, name)
        old_rel, old_slug = source.rel, source.slug
        new_rel = spelled_on_disk(vault.root, _new_path(old_rel, new_name))
        new_slug = slug_from_path(new_rel)
        if new_rel == old_rel:
            raise InvalidArgumentError(f"{name!r} is already called {new_name!r}.")
        check_inside(vault, new_rel)
        if new_slug != old_slug and (new_slug in vault.pages or (vault.root / new_rel).exists()):
            raise PageExistsError(
                f"A page named {new_slug!r} already exists. Pick another name, or merge the "
                "two pages with save_page and delete_page."
            )
        moved = read_bytes(vault, old_rel)
        check_expected(old_rel, moved, expected_hash)
        rewrites = _plan_rewrites(vault, old_slug, new_slug, new_rel) if source.indexed else {}
        paths = {slug: (new_rel if slug == old_slug else _path(vault, slug)) for slug in rewrites}
        before = {old_rel: moved} | {
            paths[slug]: read_bytes(vault, paths[slug]) for slug in rewrites if slug != old_slug
        }
        plan = journal.Plan([(old_rel, new_rel)])
        for slug, (text, _) in rewrites.items():
            plan.writes[paths[slug]] = text.encode("utf-8", "surrogateescape")
        for slug in rewrites:
            was = old_rel if slug == old_slug else paths[slug]
            history.keep(vault.root, was, before[was], "rename_page", door)
        journal.run(vault.root, plan)
        applied = sync.sync_files(vault, plan.paths())
        others = {slug: paths[slug] for slug in rewrites if slug != old_slug}
        audit.append(
            vault.root,
            audit.renamed(
                vault.root,
                door,
                old=(old_slug, old_rel),
                new=(new_slug, new_rel),
                others=others,
                before={rel: audit.data_hash(data) for rel, data in before.items()},
                placeholders=(applied.created, applied.removed),
            ),
        )
        return RenameResult(
            old_slug=old_slug,
            slug=new_slug,
            title=title_from_path(new_rel),
            path=new_rel,
            rewritten=sorted(new_slug if s == old_slug else s for s in rewrites),
            links_rewritten=sum(n for _, n in rewrites.values()),
        )


def _path(vault: Vault, slug: str) -> str:
    row = vault.index.pages.get(slug)
    assert row is not None and row.path is not None, slug
    return row.path


def _new_path(old_rel: str, new_name: str) -> str:
    """A new title stays in the page's folder; a path (a folder part, or a leading `/`)
    is taken from the vault's top."""
    text = new_name.strip().replace("\\", "/")
    if "/" in text.removeprefix("./").rstrip("/"):
        return file_path_for(text)
    folder = old_rel.rpartition("/")[0]
    return file_path_for(f"{folder}/{parse_name(text).text}" if folder else text)


def _plan_rewrites(
    vault: Vault, old_slug: str, new_slug: str, new_rel: str
) -> dict[str, tuple[str, int]]:
    """New text for every page holding a link that meant the page and would not mean it
    after the rename, with how many links change. Links that still resolve stay as
    they are, byte for byte."""
    sources = sorted({link.source for link in vault.index.links.to_page(old_slug)})
    before = {source: _read_source(vault, source) for source in sources}
    pointing = {
        source: [
            i for i, link in enumerate(found) if _resolve(vault.pages, source, link) == old_slug
        ]
        for source, (_, found) in before.items()
    }
    after = SlugSet(vault.pages)
    after.remove(old_slug)
    after.add(new_slug)
    plans: dict[str, tuple[str, int]] = {}
    for source, (text, found) in before.items():
        here = new_slug if source == old_slug else source
        targets = {
            i: _shortest_target(after, here, new_slug, new_rel, found[i].target)
            for i in pointing[source]
            if _resolve(after, here, found[i], strict=True) != new_slug
        }
        if targets:
            plans[source] = (links.rewrite_links(text, targets), len(targets))
    return plans


def _read_source(vault: Vault, slug: str) -> tuple[str, list[links.Link]]:
    """A page's text for rewriting: bytes that are not UTF-8 (and a BOM) survive the
    round trip, since only link targets change."""
    text = read_bytes(vault, _path(vault, slug)).decode("utf-8", errors="surrogateescape")
    return text, links.extract_links(text)


def _resolve(pages: SlugSet, source: str, link: links.Link, strict: bool = False) -> str | None:
    if link.is_same_page or link.is_attachment:
        return None
    key = target_key(link.target, source)
    if key is None:
        return None
    found = pages.matches(key)
    if not found or (strict and len(found) > 1):
        return None
    return pages.link_target(key, source)[0]


def _shortest_target(pages: SlugSet, source: str, new_slug: str, new_rel: str, written: str) -> str:
    """The shortest `a/b/Title` tail of the new path that resolves to the page alone;
    the slug itself when every tail holds a character a link target cannot."""
    parts = new_rel.removesuffix(".md").split("/")
    suffix = ".md" if written.strip().lower().endswith(".md") else ""
    for start in range(len(parts) - 1, -1, -1):
        candidate = "/".join(parts[start:])
        key = target_key(candidate, source)
        if (
            key is not None
            and links.is_valid_target(candidate)
            and pages.matches(key) == [new_slug]
        ):
            return candidate + suffix
    return new_slug
