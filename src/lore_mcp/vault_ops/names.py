"""Which page a name given to a tool means (SPEC §2).

A name is parsed once (`slugs.parse_name`) and looked up in the sets of pages (by
path) and placeholders (by key), by these rules in this order:

1. `path`: an exact path, with or without `.md`, `./` or `/`: exact case first, then
   ignoring case when that is one file; or the page's own slug (a handle tools show);
2. `title`: for a bare name, an exact file name in any folder, ignoring case, ties
   broken as Obsidian breaks them for links;
3. `alias`: a bare name that is a frontmatter alias of a page;
4. `placeholder`: the key or slug of a placeholder (nothing is written over by
   filling one);
5. `slug`: the slug form of the name (`my_page` finds `My Page.md`), the lore engine's
   "ask by name".

A read takes the first rule that finds something. A write needs rule 1 or 2 and one
file, or fills a placeholder: a name several files answer to is refused with them, and
a bare name that matches a page only by rule 3 or 5 is refused, naming that page and
what to send for either intent. A name that matches nothing is a new page, whose name
must be a file name Obsidian accepts; but where a rename took a page away from that name
(`renamed_to`), a change to part of a page by it is refused (`write.save_page`).
"""

from __future__ import annotations

import heapq
import unicodedata
from dataclasses import dataclass, field
from typing import Literal

from lore_mcp.errors import (
    AmbiguousNameError,
    InvalidNameError,
    LooseNameError,
    PageNotFoundError,
)
from lore_mcp.pagesets import pick
from lore_mcp.slugs import (
    Name,
    file_name,
    new_file_path,
    parse_name,
    path_key,
    strip_md,
)
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import spelled_on_disk

Rule = Literal["path", "title", "placeholder", "alias", "slug"]


@dataclass(frozen=True, slots=True)
class Found:
    """What a name means: a page's path or a placeholder's key, by which rule, and the
    other pages it could have meant (paths)."""

    key: str
    rule: Rule
    alternatives: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Target:
    """The one file a write lands on."""

    rel: str
    exists: bool  # the file is there (and is a page)
    placeholder: bool = False  # the write fills a placeholder


def _chosen(rule: Rule, found: list[str], best: str) -> Found:
    return Found(best, rule, [path for path in found if path != best])


def _by_path(vault: AppState, name: Name) -> Found | None:
    """Rule 1: the file at exactly this path (exact case first), or the page whose slug
    the name is."""
    found = vault.pages.at(name.key.path)
    wanted = unicodedata.normalize("NFC", name.text)
    for same in (
        [p for p in found if strip_md(p) == name.text],  # as spelled, code point for point
        [p for p in found if unicodedata.normalize("NFC", strip_md(p)) == wanted],
    ):
        if same:
            return _chosen("path", same, same[0])
    if found:
        return _chosen("path", found, found[0])
    if name.text == name.key.fold:
        held = vault.pages.slugged(name.key.fold, exact=True)
        if len(held) == 1:
            return Found(held[0], "path")
    return None


def _by_title(vault: AppState, name: Name) -> Found | None:
    """Rule 2: a bare name is the file name of pages in any folder."""
    if name.explicit:
        return None
    found = vault.pages.titled(name.key.path)
    return _chosen("title", found, pick(found, None)) if found else None


def _by_placeholder(vault: AppState, name: Name) -> Found | None:
    """Rule 4: the placeholder with this key, else the one with this slug."""
    if name.key.path in vault.placeholders:
        return Found(name.key.path, "placeholder")
    found = vault.placeholders.slugged(name.key.fold, exact=True) if name.key.fold else []
    return _chosen("placeholder", found, found[0]) if found else None


def _by_alias(vault: AppState, name: Name) -> Found | None:
    """Rule 3: a bare name is a frontmatter alias of pages."""
    found = [] if name.explicit else vault.aliases.pages(name.key.path)
    return _chosen("alias", found, pick(found, None)) if found else None


def _by_slug(vault: AppState, name: Name) -> Found | None:
    """Rule 5: the slug form of the name is a page's slug (or the tail of one, for a
    name not anchored with `./` or `/`), else a placeholder's."""
    if not name.key.fold:
        return None
    exact = name.explicit and name.given.strip().startswith(("./", "/"))
    found = vault.pages.slugged(name.key.fold, exact=exact)
    if found:
        return _chosen("slug", found, pick(found, None))
    found = vault.placeholders.slugged(name.key.fold, exact=exact)
    return _chosen("slug", found, found[0]) if found else None


def _as_stored(vault: AppState, name: str) -> str | None:
    """The page whose path is `name` character for character (with or without `.md`):
    a handle a tool gave, whatever the file's name holds (a `\\` on Linux is a name,
    not a folder)."""
    for key in (name, name + ".md"):
        if key in vault.pages:
            return key
    return None


def find(vault: AppState, name: str) -> Found:
    """The page or placeholder a read of `name` means, by the first rule that finds one."""
    if (key := _as_stored(vault, name)) is not None:
        return Found(key, "path")
    parsed = parse_name(name)
    for rule in (_by_path, _by_title, _by_alias, _by_placeholder, _by_slug):
        if (found := rule(vault, parsed)) is not None:
            return found
    raise PageNotFoundError(name, suggest(vault, parsed))


def _page_named(vault: AppState, name: str) -> Target | Name:
    """The page a write's `name` means by rule 1 or 2, or else the name parsed, for the
    rules a write may go on with. A name several files answer to, or one that is only
    an alias, is refused."""
    if (key := _as_stored(vault, name)) is not None:
        return Target(key, exists=True)
    parsed = parse_name(name)
    found = _by_path(vault, parsed) or _by_title(vault, parsed)
    if found is not None and found.alternatives:
        raise AmbiguousNameError(name, [found.key, *found.alternatives])
    if found is not None:
        return Target(found.key, exists=True)
    if (close := _by_alias(vault, parsed)) is not None:
        raise _loose(parsed, close)
    return parsed


def for_writing(vault: AppState, name: str) -> Target:
    """The file a save of `name` writes: a page, a placeholder to fill, or a new file."""
    parsed = _page_named(vault, name)
    if isinstance(parsed, Target):
        return parsed
    if (held := _by_placeholder(vault, parsed)) is not None:
        return Target(_fill_path(vault, held.key), exists=False, placeholder=True)
    close = None if parsed.explicit else _by_slug(vault, parsed)
    if close is not None and close.key in vault.pages:
        raise _loose(parsed, close)
    return Target(_new_path(vault, parsed), exists=False)


def renamed_to(vault: AppState, rel: str) -> str | None:
    """The page the file `rel` became by renames, if it was renamed (and then perhaps
    again) and that page is there; None otherwise, and once a page is at `rel` again."""
    key, seen = path_key(rel), set()
    while (moved := vault.index.moves.moved_to(key)) is not None and key not in seen:
        if moved in vault.pages:
            return moved
        seen.add(key)
        key = path_key(moved)
    return None


def _loose(name: Name, close: Found) -> LooseNameError:
    """The refusal of a write whose name only matches `close` loosely, with what to
    send to create a new page instead (a path, which names exactly one place)."""
    try:
        new_file_path(name)
        new: str | None = name.text + ".md"
    except InvalidNameError:
        safe = file_name(name.text.rpartition("/")[2])
        new = (
            f"{safe}.md"
            if safe and safe.lower() != close.key.rpartition("/")[2][:-3].lower()
            else None
        )
    return LooseNameError(name.given, close.key, close.rule, new)


def existing(vault: AppState, name: str, *, placeholders_too: bool = False) -> Target:
    """The page file a delete or rename of `name` acts on; it must be there, and the name
    must be its path or its title (rules 1 and 2). A name several files answer to is
    refused with them, as for any write. With
    `placeholders_too`, a placeholder's name answers a target that does not exist."""
    parsed = _page_named(vault, name)
    if isinstance(parsed, Target):
        return parsed
    if placeholders_too and (held := _by_placeholder(vault, parsed)) is not None:
        return Target(held.key, exists=False, placeholder=True)
    close = None if parsed.explicit else _by_slug(vault, parsed)
    if close is not None and close.key in vault.pages:
        raise _loose(parsed, close)
    raise PageNotFoundError(name, suggest(vault, parsed))


def _new_path(vault: AppState, name: Name) -> str:
    return spelled_on_disk(vault.root, new_file_path(name))


def _fill_path(vault: AppState, key: str) -> str:
    """The file a filled placeholder gets: named as its first link wrote it (made safe
    for a file name), in the folder of its key, spelled as that folder is on disk."""
    row = vault.index.pages.get(key)
    title = row.title if row is not None else key.rpartition("/")[2]
    folder = key.rpartition("/")[0]
    written = vault.index.links.first_targets([key]).get(key, "")
    if not written.strip().startswith(("./", "../", "/")):
        written_folder = written.replace("\\", "/").rpartition("/")[0].strip("/")
        if written_folder and written_folder.lower() == folder:
            folder = written_folder
    safe = parse_name(_safe_title(f"{folder}/{title}" if folder else title))
    return spelled_on_disk(vault.root, new_file_path(safe))


def _safe_title(text: str) -> str:
    return "/".join(file_name(part) or "Untitled" for part in text.split("/"))


def suggest(vault: AppState, name: Name, count: int = 5, substrings: bool = True) -> list[str]:
    """Up to `count` pages or placeholders (as tools name them) spelled like `name`
    (then, with `substrings`, those whose slug contains it)."""
    last = name.key.fold.rpartition("/")[2]
    found: list[str] = list(vault.pages.slugged(name.key.fold)) if name.key.fold else []
    if last:
        rated = set(vault.pages.close_titles(last, count))
        close = [title for _, title in heapq.nlargest(count, rated)]
        found += [p for title in close for p in vault.pages.with_slug_title(title)]
        found += [
            k
            for _, title in vault.placeholders.close_titles(last, count)
            for k in vault.placeholders.slugged(title)
        ]
    handles = list(dict.fromkeys(vault.handle(key) for key in found))
    if substrings and last and len(handles) < count:
        handles += sorted(
            h for p in vault.pages if last in (h := vault.pages.handle(p)) and h not in handles
        )
    return handles[:count]
