"""read_page's result budget: a page too long for one result is read in exact parts.

A part is a span of the page's text, from a line and column to another. Joined, the
parts are the file's text exactly, whatever its line lengths: a part ends before a
heading, else after a line break, else at a space, else anywhere (never inside a CRLF).
Every part fits the limit, as text and as JSON.

The text comes first. The lists (other matches for the name, the links on the part's
lines, backlinks) fill the room it leaves, and are cut from the tail (backlinks first)
with a count and a note on where to get them. When the page must be split, a quarter
of the room is kept for the lists, so every part can show the links on its lines.

Where a part ends depends only on the text from its start and on the room, which is
the same for every part of a page: reading on from where a part ends gives the parts
the first read counted. Pure functions of the result model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from lore_mcp.config import MAX_FILE_BYTES
from lore_mcp.markdown import BREAK
from lore_mcp.models import PageView

Draw = Callable[[Any], str]

LIST_SHARE = 4  # a page read in parts keeps 1/LIST_SHARE of the room for its lists
LARGEST = MAX_FILE_BYTES  # no line, column or count of a part is larger
MIN_ROOM = 256

# What JSON escapes: a quote, a backslash, control characters (as \n, or as \u0000).
_ESCAPED = re.compile(r'["\\\x00-\x1f]')
_SHORT = frozenset('"\\\b\f\n\r\t')
# A line that opens like an ATX heading: a part prefers to end before one.
_HEADING = re.compile(r"(?:(?<=\n)|(?<=\r)(?!\n)) {0,3}#{1,6}(?=[ \t\r\n]|\Z)")
_LISTS = (  # trimmed in this order
    ("backlinks", "backlinks"),
    ("links", "links on these lines"),
    ("alternatives", "other matches of the name"),
)


def fits(model: PageView, draw: Draw, limit: int) -> bool:
    return len(model.model_dump_json()) <= limit and len(draw(model)) <= limit


def fit_page(view: PageView, draw: Draw, limit: int) -> PageView:
    """`view` if it fits (read from the top), else its first part from where it starts,
    with `parts`, where to read on, and the lists that fit."""
    if not (view.offset or view.column) and fits(view, draw, limit):
        return view
    frame, dropped = _frame(view, draw, limit)
    ends = cuts(view.content, max(MIN_ROOM, limit - _size(_probe(frame, dropped), draw)))
    return _filled(_part(frame, view, ends[0], len(ends)), view, draw, limit, dropped)


# -- where the parts end ------------------------------------------------------------------


def json_end(text: str, start: int, room: int) -> int:
    """The end of the longest span from `start` whose JSON string (quotes aside) is at
    most `room` characters."""
    spent = 0  # characters the escapes add
    for found in _ESCAPED.finditer(text, start, min(len(text), start + room)):
        at = found.start()
        if at >= start + room - spent:
            break
        extra = 1 if found.group() in _SHORT else 5
        if at + 1 - start + spent + extra > room:
            return at
        spent += extra
    return min(len(text), start + room - spent)


def cuts(text: str, room: int) -> list[int]:
    """Where each part of `text` ends: the rest when it fits in `room` (JSON
    characters), else the best place within the share of the room text gets."""
    share = max(1, room - room // LIST_SHARE)
    ends: list[int] = []
    at = 0
    while True:
        if json_end(text, at, room) == len(text):
            return [*ends, len(text)]
        at = best_cut(text, at, json_end(text, at, share))
        ends.append(at)


def best_cut(text: str, start: int, end: int) -> int:
    """Where a part from `start` that may run to `end` ends: before the last heading
    in its second half, else after its last line break, else after a space in its last
    fifth, else at `end` (moved off the middle of a CRLF)."""
    if end >= len(text):
        return len(text)
    half = start + (end - start) // 2
    heading = None
    for found in _HEADING.finditer(text, half + 1, min(len(text), end + 8)):
        if found.start() <= end:
            heading = found.start()
    if heading is not None:
        return heading
    newline = text.rfind("\n", start, end)
    lone_cr = text.rfind("\r", start, end)
    if lone_cr + 1 < len(text) and text[lone_cr + 1] == "\n":
        lone_cr = -1
    if (last := max(newline, lone_cr)) >= start:
        return last + 1
    space = max(text.rfind(" ", start, end), text.rfind("\t", start, end))
    if space >= start + (end - start) * 4 // 5:
        return space + 1
    if end - 1 > start and text[end - 1] == "\r" and text[end] == "\n":
        return end - 1
    return end if end > start else start + 1


# -- the part and its lists -----------------------------------------------------------------


def _size(model: PageView, draw: Draw) -> int:
    return max(len(model.model_dump_json()), len(draw(model)))


def _frame(view: PageView, draw: Draw, limit: int) -> tuple[PageView, bool]:
    """The view without its text and lists; without its properties too (they are in
    the frontmatter) if they would leave the text less than a quarter of the room."""
    bare = view.model_copy(update={"content": "", "links": [], "backlinks": [], "alternatives": []})
    if _size(_probe(bare, False), draw) <= limit * 3 // 4:
        return bare, False
    return bare.model_copy(update={"properties": {}, "aliases": [], "tags": []}), True


def _probe(frame: PageView, dropped: bool) -> PageView:
    """The frame as large as any of its parts can be: every number at its widest, and
    the longest note."""
    numbers = dict.fromkeys(
        ("offset", "column", "total_lines", "next_offset", "next_column", "parts", "link_count"),
        LARGEST,
    )

    wide = frame.model_copy(update=numbers)
    cut = {field: (LARGEST, LARGEST) for field, _ in _LISTS}
    return wide.model_copy(update={"truncated": True, "note": _note(wide, cut, dropped)})


def _part(frame: PageView, view: PageView, end: int, parts: int) -> PageView:
    """The first `end` characters of the view's content, and where the next part starts."""
    content = view.content[:end]
    update: dict[str, Any] = {"content": content, "parts": parts}
    if end < len(view.content):
        breaks = list(BREAK.finditer(content))
        update["next_offset"] = view.offset + len(breaks)
        update["next_column"] = end - breaks[-1].end() if breaks else view.column + end
    else:
        update["next_offset"] = update["next_column"] = None
    return frame.model_copy(update=update)


def _filled(part: PageView, view: PageView, draw: Draw, limit: int, dropped: bool) -> PageView:
    """The part with as much of each list as fits, backlinks cut first, then links,
    then the other matches; and its note."""
    first, last = view.offset + 1, part.last_line
    lists: dict[str, Sequence[object]] = {
        "backlinks": view.backlinks,
        "links": [link for link in view.links if first <= link.line <= last],
        "alternatives": view.alternatives,
    }
    kept = {field: len(items) for field, items in lists.items()}
    part = part.model_copy(update={"link_count": len(lists["links"])})

    def build(counts: dict[str, int]) -> PageView:
        shown = {field: items[: counts[field]] for field, items in lists.items()}
        cut = {f: (counts[f], len(lists[f])) for f in lists if counts[f] < len(lists[f])}
        full = part.model_copy(update=shown)
        note = _note(full, cut, dropped)
        return full.model_copy(update={"truncated": note is not None, "note": note})

    for field, _ in _LISTS:
        if fits(build(kept), draw, limit):
            break
        kept[field] = largest(kept[field], _with(build, kept, field, draw, limit))
    return build(kept)


def _with(
    build: Callable[[dict[str, int]], PageView],
    kept: dict[str, int],
    field: str,
    draw: Draw,
    limit: int,
) -> Callable[[int], bool]:
    """Whether the part fits with `k` items of the list `field`."""
    return lambda k: fits(build({**kept, field: k}), draw, limit)


def largest(count: int, ok: Callable[[int], bool]) -> int:
    """The largest k in 0..count with ok(k), for an `ok` that stays false once false."""
    low, high = 0, count
    while low < high:
        mid = (low + high + 1) // 2
        if ok(mid):
            low = mid
        else:
            high = mid - 1
    return low


def _note(part: PageView, cut: dict[str, tuple[int, int]], dropped: bool) -> str | None:
    """Which part this is and how to read on; what was left out and where it is."""
    sentences: list[str] = []
    if part.next_offset is not None:
        here = "" if not (part.offset or part.column) else " from here"
        column = f", column={part.next_column}" if part.next_column else ""
        version = f", version={part.version.number}" if part.version else ""
        sentences += [
            f"Part 1 of {part.parts}{here}, to fit the size limit: lines "
            f"{part.offset + 1}-{part.last_line} of {part.total_lines}.",
            f"Read on with offset={part.next_offset}{column}{version}.",
            "To change the page, prefer save_page's append, prepend, edit or section modes "
            "(a replace must send every part).",
        ]
    if cut:
        labels = dict(_LISTS)
        shown = ", ".join(f"{k} of {n} {labels[field]}" for field, (k, n) in cut.items())
        where = "get_backlinks pages through every backlink"
        if "links" in cut:
            where += ", get_graph with this slug through every page it links to"
        sentences.append(f"Only {shown} fit; {where}.")
    if dropped:
        sentences.append("The properties are left out: they are in the frontmatter.")
    return " ".join(sentences) or None
