"""Links written anew: a page's link targets replaced, each written as its link needs it
(raw in a wiki link, URL-encoded in a Markdown link that was), and nothing else of the
text changed. Where the links stand comes from `links.scan`. Pure functions, no I/O."""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import quote

from lore_mcp.links import Link, extract_links

_FORBIDDEN_IN_TARGET = frozenset("[]|#\r\n")
_ENCODED_BYTE = re.compile(r"%[89A-Fa-f][0-9A-Fa-f]")  # a byte of a non-ASCII character
_ESCAPED = {char: f"%{ord(char):02X}" for char in " %()<>"}  # what a raw destination cannot hold


def is_valid_target(target: str) -> bool:
    """Whether `target` can stand inside `[[...]]` and mean the same when read back."""
    return bool(target.strip()) and not _FORBIDDEN_IN_TARGET.intersection(target)


def replace_spans(text: str, changes: Mapping[tuple[int, int], str]) -> str:
    """`text` with each (start, end) span replaced; the spans must not overlap."""
    pieces: list[str] = []
    done = 0
    for (start, end), new in sorted(changes.items()):
        pieces += [text[done:start], new]
        done = end
    return "".join([*pieces, text[done:]])


def rewrite_links(text: str, new_targets: Mapping[int, str]) -> str:
    """Replace the targets of the links numbered as in `extract_links`; nothing else
    changes. The new targets are written as each link needs them (see `written_as`)."""
    found = extract_links(text)
    if any(not 0 <= i < len(found) for i in new_targets):
        raise IndexError(f"link index out of range: the page has {len(found)} links")
    changes = {}
    for i, new in new_targets.items():
        link = found[i]
        changes[(link.start, link.end)] = written_as(link, text, new)
    return replace_spans(text, changes)


def written_as(link: Link, text: str, target: str) -> str:
    """`target` as `link` must write it: as it is in a wiki link, URL-encoded in a
    Markdown link that was (or that cannot hold it raw)."""
    if not link.markdown:
        if not is_valid_target(target):
            raise ValueError(f"not a valid link target: {target!r}")
        return target
    written = text[link.start : link.end]
    if link.start > 0 and text[link.start - 1] == "<" and "%" not in written:
        return target.replace(">", "%3E")
    if _ENCODED_BYTE.search(written):  # it was encoded as a URL: encode it all
        return quote(target, safe="/")
    return "".join(_ESCAPED.get(char, char) for char in target)
