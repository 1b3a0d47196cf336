"""Which page a name given to a tool means.

Reads find a page as readily as they can: the exact slug, then (for a bare name, or a
path not anchored with `./` or `/`) the page of that name in any folder, placeholders,
then a looser spelling; the other candidates are listed. Writes name exactly one file:
an explicit path (a folder part, a leading `./` or `/`, a trailing `.md`) means that
place; a bare name means the page of that slug, else the unique page of that name in
any folder, else a new page at the top. A placeholder is filled only by its own slug. A
write never lands on a page through a loose match; an ambiguous name fails with the
candidates.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from lore_mcp.errors import AmbiguousNameError, PageNotFoundError
from lore_mcp.slugs import (
    Key,
    file_path_for,
    parse_name,
    pick_candidate,
    slug_from_path,
)
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import spelled_on_disk


@dataclass(frozen=True, slots=True)
class Target:
    """The one file a write lands on."""

    rel: str
    slug: str
    exists: bool  # the file is there
    placeholder: bool = False  # the write fills a placeholder
    indexed: bool = True  # False for a file passed over: another file holds its slug


def for_reading(vault: AppState, name: str) -> tuple[str, list[str]]:
    """The slug a read of `name` means, and what else it could have meant (slugs, and
    the files that share the chosen slug)."""
    parsed = parse_name(name)
    anchored = name.strip().replace("\\", "/").startswith(("./", "/"))
    key = parsed.key if anchored else Key(parsed.key.path, exact=False)
    for found in (
        vault.pages.matches(key),
        vault.placeholders.matches(key),
        vault.pages.matches_loosely(key),
    ):
        if found:
            chosen = found[0] if len(found) == 1 else pick_candidate(found, None)
            others = [slug for slug in found if slug != chosen]
            return chosen, others + sharing(vault, chosen)
    raise PageNotFoundError(name, suggest(vault, parsed.key))


def sharing(vault: AppState, slug: str) -> list[str]:
    """The files passed over because the page `slug` holds their slug."""
    return [path for path, shadowed in vault.index.pages.shadowed() if shadowed == slug]


def passed_over(vault: AppState, name: str) -> str | None:
    """The file an explicit path names exactly, when it is one passed over for its slug."""
    parsed = parse_name(name)
    if not parsed.explicit or not (shared := sharing(vault, parsed.key.path)):
        return None
    rel = spelled_on_disk(vault.root, file_path_for(name))
    return rel if rel in shared else None


def for_writing(vault: AppState, name: str) -> Target:
    """The file a save of `name` writes: a page, a placeholder to fill, or a new file."""
    parsed = parse_name(name)
    slug = parsed.key.path
    if (rel := passed_over(vault, name)) is not None:
        return Target(rel, slug, exists=True, indexed=False)
    if parsed.explicit:
        if slug in vault.pages:
            return _page(vault, name, slug, explicit=True)
        rel = spelled_on_disk(vault.root, file_path_for(name))
        return Target(
            rel, slug_from_path(rel), exists=False, placeholder=slug in vault.placeholders
        )
    if slug in vault.pages:
        return _page(vault, name, slug)
    if slug in vault.placeholders:
        return Target(_fill_path(vault, slug), slug, exists=False, placeholder=True)
    found = vault.pages.matches(parsed.key)
    if len(found) > 1:
        raise AmbiguousNameError(name, found)
    if found:
        return _page(vault, name, found[0])
    rel = file_path_for(name)
    return Target(rel, slug_from_path(rel), exists=False)


def existing(vault: AppState, name: str) -> Target:
    """The file a delete or rename of `name` acts on; it must be there."""
    target = for_writing(vault, name)
    if not target.exists:
        raise PageNotFoundError(name, suggest(vault, parse_name(name).key))
    return target


def _page(vault: AppState, name: str, slug: str, explicit: bool = False) -> Target:
    """The page `slug` holds, unless other files share the slug and `name` is not the
    exact path of the one that holds it."""
    row = vault.index.pages.get(slug)
    assert row is not None and row.path is not None, slug
    if (others := sharing(vault, slug)) and not (
        explicit and spelled_on_disk(vault.root, file_path_for(name)) == row.path
    ):
        raise AmbiguousNameError(name, [row.path, *others])
    return Target(row.path, slug, exists=True)


def _fill_path(vault: AppState, slug: str) -> str:
    """The file a filled placeholder gets: named as its first link wrote it (made safe
    for a file name), in the folder of its slug, spelled as that folder is on disk."""
    row = vault.index.pages.get(slug)
    title = row.title if row is not None else slug.rpartition("/")[2]
    folder = slug.rpartition("/")[0]
    written = vault.index.links.first_targets([slug]).get(slug, "")
    if not written.strip().startswith(("./", "../", "/")):
        written_folder = written.replace("\\", "/").rpartition("/")[0].strip("/")
        if written_folder and slug_from_path(written_folder) == folder:
            folder = written_folder
    return spelled_on_disk(vault.root, file_path_for(f"{folder}/{title}" if folder else title))


def suggest(vault: AppState, key: Key, count: int = 5, substrings: bool = True) -> list[str]:
    """Up to `count` existing slugs spelled like `key` (then, with `substrings`, those
    that contain it)."""
    last = key.path.rpartition("/")[2]
    sets = (vault.pages, vault.placeholders)
    rated = {pair for slugs in sets for pair in slugs.close_names(last, count)}
    close = [name for _, name in heapq.nlargest(count, rated)]
    found = [s for name in [last, *close] for slugs in sets for s in slugs.named(name)]
    found = list(dict.fromkeys([*vault.pages.matches_loosely(key), *found]))
    if substrings and len(found) < count:
        found += sorted(s for s in vault.pages if last and last in s and s not in found)
    return found[:count]
