"""Renaming and moving a page, and rewriting the links that pointed at it."""

from __future__ import annotations

from lore_mcp import audit, links
from lore_mcp.errors import FileVanishedError, InvalidArgumentError, PageExistsError, VaultError
from lore_mcp.models import RenameResult
from lore_mcp.slugs import SlugSet, file_path_for, slug_from_path, target_key, title_from_path
from lore_mcp.vault import files, names, sync
from lore_mcp.vault.core import Vault
from lore_mcp.vault.open import writing
from lore_mcp.vault.pages import check_inside, page_path, settle_shared_slug


def rename_page(vault: Vault, name: str, new_name: str, *, door: str = "api") -> RenameResult:
    """Move a page to a new title or `folder/New Title` and rewrite exactly the links
    that pointed at it, in every page. Recorded in the audit log."""
    with writing(vault):
        old_slug = names.existing_page(vault, name)
        old_rel = page_path(vault, old_slug)
        new_rel = _new_path(old_rel, new_name)
        new_slug = slug_from_path(new_rel)
        if new_rel == old_rel:
            raise InvalidArgumentError(f"{name!r} is already called {new_name!r}.")
        check_inside(vault, new_rel)
        if new_slug != old_slug and (new_slug in vault.pages or (vault.root / new_rel).exists()):
            raise PageExistsError(
                f"A page named {new_slug!r} already exists. Pick another name, or merge the "
                "two pages with save_page and delete_page."
            )
        rewrites = _plan_rewrites(vault, old_slug, new_slug, new_rel)
        others = {s: page_path(vault, s) for s in rewrites if s != old_slug}
        before = audit.hashes(vault.root, [old_rel, *others.values()])
        _move(vault, old_rel, new_rel)
        for source, (text, _) in rewrites.items():
            rel = new_rel if source == old_slug else others[source]
            files.atomic_write(vault.root / rel, text.encode("utf-8", "surrogateescape"))
        upserts = [
            parsed
            for rel in {new_rel, *others.values()}
            if (parsed := files.read_page_file(vault.root, rel)) is not None
        ]
        applied = sync.apply(vault, upserts, [old_slug])
        if settle_shared_slug(vault, old_slug):
            applied.created = [s for s in applied.created if s != old_slug]
        audit.append(
            vault.root,
            audit.renamed(
                vault.root,
                door,
                old=(old_slug, old_rel),
                new=(new_slug, new_rel),
                others=others,
                before=before,
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


def _new_path(old_rel: str, new_name: str) -> str:
    text = new_name.strip().replace("\\", "/")
    if "/" in text.strip("/"):
        return file_path_for(text)
    folder = old_rel.rpartition("/")[0]
    return f"{folder}/{file_path_for(text)}" if folder else file_path_for(text)


def _move(vault: Vault, old_rel: str, new_rel: str) -> None:
    dest = vault.root / new_rel
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        (vault.root / old_rel).replace(dest)
    except OSError as exc:
        raise VaultError(f"Cannot move {old_rel!r} to {new_rel!r}: {exc.strerror or exc}.") from exc
    files.fsync_dir(dest.parent)


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
    rel = page_path(vault, slug)
    try:
        data = (vault.root / rel).read_bytes()
    except FileNotFoundError:
        raise FileVanishedError(rel) from None
    except OSError as exc:
        raise VaultError(
            f"Cannot read {rel!r} to rewrite its links: {exc.strerror or exc}. Nothing was "
            "changed; try again once the file is back."
        ) from exc
    text = data.decode("utf-8", errors="surrogateescape")
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
