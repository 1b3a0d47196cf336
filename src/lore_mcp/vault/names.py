"""Which page a name given to a tool means.

Reads resolve a name as a link would and list the other candidates; writes need a
unique match and refuse the rest with the candidates. An unknown name fails with up to
five close slugs, suggested and never used.
"""

from __future__ import annotations

import heapq

from lore_mcp.errors import AmbiguousNameError, PageNotFoundError
from lore_mcp.slugs import Key, SlugSet, name_key, pick_candidate
from lore_mcp.vault.core import Vault


def lookup(vault: Vault, name: str) -> tuple[list[str], bool]:
    """Every slug a name could mean, and whether they are placeholders."""
    key = name_key(name)
    found = vault.pages.matches(key)
    if found:
        return found, False
    found = vault.placeholders.matches(key)
    if found:
        return found, True
    raise PageNotFoundError(name, suggest(vault, key))


def for_reading(vault: Vault, name: str) -> tuple[str, list[str]]:
    """The slug a read of `name` means, and the other slugs it could have meant."""
    found, _ = lookup(vault, name)
    chosen = found[0] if len(found) == 1 else pick_candidate(found, None)
    return chosen, [slug for slug in found if slug != chosen]


def _unique(slugs: SlugSet, name: str) -> str | None:
    found = slugs.matches(name_key(name))
    if len(found) > 1:
        raise AmbiguousNameError(name, found)
    return found[0] if found else None


def page_for_writing(vault: Vault, name: str) -> str | None:
    """The one real page a write names; None when it names none."""
    return _unique(vault.pages, name)


def placeholder_for_writing(vault: Vault, name: str) -> str | None:
    """The one placeholder a write names; None when it names none."""
    return _unique(vault.placeholders, name)


def existing_page(vault: Vault, name: str) -> str:
    """The one real page a write names; an unknown name fails with suggestions."""
    slug = page_for_writing(vault, name)
    if slug is None:
        raise PageNotFoundError(name, suggest(vault, name_key(name)))
    return slug


def suggest(vault: Vault, key: Key, count: int = 5, substrings: bool = True) -> list[str]:
    """Up to `count` existing slugs spelled like `key` (then, with `substrings`, those
    that contain it)."""
    last = key.path.rpartition("/")[2]
    sets = (vault.pages, vault.placeholders)
    rated = {pair for slugs in sets for pair in slugs.close_names(last, count)}
    close = [name for _, name in heapq.nlargest(count, rated)]
    found = [s for name in [last, *close] for slugs in sets for s in slugs.named(name)]
    found = list(dict.fromkeys(found))
    if substrings and len(found) < count:
        found += sorted(s for s in vault.pages if last and last in s and s not in found)
    return found[:count]
