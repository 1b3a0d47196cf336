"""The block structure of a page: which parts of its text are prose (where links, tags
and mentions are read), and which are code, HTML or fences (where they are not).

markdown-it-py finds the structure; a page with none worth parsing (prose, fences at
the left margin, no indented code or HTML) is split at its fences instead, which is the
same answer for such pages (the link scanner checks, line by line, that nothing there
depends on a structure only markdown-it would see). Pure functions, no I/O.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_left, bisect_right
from collections import defaultdict
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

BREAK = re.compile(r"\r\n?|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
# Pages with these take markdown-it: indented code, HTML blocks, tilde fences.
_NEEDS_PARSER = ("\t", "    ", "<", "~~~")
_FENCE_PREFIX = frozenset(" >*+-0123456789.)")  # what may stand before a fence in a container

Regions = list[tuple[int, int]]


def line_starts(text: str) -> list[int]:
    """Where each line starts; lines end at LF, CRLF or CR, as markdown-it counts them."""
    return [0] + [m.end() for m in BREAK.finditer(text)]


def line_start(text: str, at: int) -> int:
    """Where the line holding `at` starts (after its line break)."""
    return max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1


def line_end(text: str, at: int, end: int) -> int:
    """Where the line holding `at` ends (its line break, or `end`)."""
    found = BREAK.search(text, at, end)
    return end if found is None else found.start()


def split_lines(text: str) -> list[str]:
    """The lines with their line breaks."""
    return _LINE.findall(text)


def source_lines(text: str) -> list[str]:
    """The lines without their line breaks."""
    return BREAK.split(text)


def line_text(text: str, line: int) -> str:
    """The 1-based line's text without its line break; `""` when out of range."""
    lines = source_lines(text)
    return lines[line - 1] if 1 <= line <= len(lines) else ""


@cache
def _md() -> MarkdownIt:
    """markdown-it for block structure only; built on first need, shared by threads."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").disable(["inline", "reference"])
    md.parse("x")  # builds its rule caches before threads share it
    return md


def parsed_regions(text: str, start: int = 0) -> Regions:
    """The prose of text[start:] by markdown-it: the source lines of each inline token
    (a paragraph, a heading, a table row), as (start, end) offsets in `text`."""
    body = text[start:]
    starts = line_starts(body)
    regions: Regions = []
    for token in _md().parse(body):
        if token.type == "inline" and token.map:
            first, last = token.map
            region = (
                start + starts[first],
                start + (starts[last] if last < len(starts) else len(body)),
            )
            if not regions or regions[-1] != region:  # table cells share their row
                regions.append(region)
    return regions


def simple_regions(text: str, start: int = 0) -> Regions | None:
    """The prose of text[start:] when its structure is plain: everything between the
    fences at the left margin. None when markdown-it must find the structure."""
    if any(text.find(sign, start) >= 0 for sign in _NEEDS_PARSER):
        return None
    regions: Regions = []
    pos = search = start
    while (at := text.find("```", search)) >= 0:
        first = line_start(text, at)
        last = line_end(text, at, len(text))
        if first != at:
            if _FENCE_PREFIX.issuperset(text[first:at]):
                return None  # a fence in a list or quote, or indented
            search = last  # backticks inside a line: a code span, read as prose
            continue
        run = len(text[at:last]) - len(text[at:last].lstrip("`"))
        if "`" in text[at + run : last] or "|" in text[at + run : last]:
            return None  # a code span at the start of a line, or maybe a table row
        regions.append((pos, at))
        pos = search = _fence_end(text, run, last)
        if pos < 0:
            return None
    regions.append((pos, len(text)))
    return regions


def _fence_end(text: str, run: int, pos: int) -> int:
    """Where the text after the fence opened by `run` backticks (its content starting
    after `pos`) goes on: after the closing line (up to three spaces, at least `run`
    backticks, then only spaces); -1 when it never closes."""
    while (at := text.find("`" * run, pos)) >= 0:
        first = line_start(text, at)
        last = line_end(text, at, len(text))
        tail = text[at:last].rstrip(" ")
        if at - first <= 3 and not text[first:at].strip(" ") and not tail.strip("`"):
            return last
        pos = last
    return -1


# -- a Markdown link's destination and title, read as markdown-it reads them ------------

_BLANKS = frozenset(" \t\n\r")


def skip_blanks(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos] in _BLANKS:
        pos += 1
    return pos


def link_destination(text: str, pos: int, end: int) -> int:
    """Where a link destination starting at `pos` ends; `pos` when there is none."""
    start = pos
    if text[pos] == "<":
        pos += 1
        while pos < end:
            char = text[pos]
            if char in "\n\r<":
                return start
            if char == ">":
                return pos + 1
            pos += 2 if char == "\\" and pos + 1 < end else 1
        return start
    level = 0
    while pos < end:
        char = text[pos]
        if char == " " or (char < " " and char != "\x00") or char == "\x7f":
            break  # markdown-it reads a NUL as U+FFFD: part of the destination
        if char == "\\" and pos + 1 < end:
            if text[pos + 1] == " ":
                break
            pos += 2
            continue
        if char == "(":
            level += 1
            if level > 32:
                return start
        elif char == ")":
            if level == 0:
                break
            level -= 1
        pos += 1
    return pos if level == 0 else start


_DESTINATION_STOP = re.compile(r"[)\\\x01-\x20\x7f]")  # what ends or escapes a destination
_OPEN_PAREN = re.compile(r"\(")


class Destinations:
    """`link_destination` for the many destinations of one text, in time that does not
    grow with how far each runs: the parentheses and the characters that end a
    destination are found once, and each destination jumps between them (a page of
    `[a](` runs would otherwise read a few hundred characters per `[`)."""

    def __init__(self, text: str) -> None:
        self._text = text  # positions as machine integers: a big page has millions of stops
        self._opens = array("q", (m.start() for m in _OPEN_PAREN.finditer(text)))
        self._stops = array("q", (m.start() for m in _DESTINATION_STOP.finditer(text)))

    def end(self, pos: int, end: int) -> int:
        """What `link_destination(text, pos, end)` answers."""
        text, opens, stops = self._text, self._opens, self._stops
        if text[pos] == "<":
            return link_destination(text, pos, end)
        start, level = pos, 0
        while True:
            i = bisect_left(stops, pos)
            stop = stops[i] if i < len(stops) and stops[i] < end else end
            level += bisect_left(opens, stop) - bisect_left(opens, pos)
            if level > 32:
                return start
            if stop >= end:
                return stop if level == 0 else start
            char = text[stop]
            if char == "\\" and stop + 1 >= end:
                pos = end  # a backslash at the very end is part of the destination
            elif char == "\\" and text[stop + 1] != " ":
                pos = stop + 2  # an escaped character, `(` or `)` too, counts for nothing
            elif char == ")" and level > 0:
                level -= 1
                pos = stop + 1
            else:  # `\ `, a `)` that closes the link, a space or a control character
                return stop if level == 0 else start


class Backticks:
    """The runs of backticks of one text, found once: where a code span opening at a
    backtick closes, found by bisection, however many runs never close."""

    def __init__(self, text: str) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._by_length: defaultdict[int, list[int]] = defaultdict(list)
        for run in re.finditer("`+", text):
            self._starts.append(run.start())
            self._ends.append(run.end())
            self._by_length[run.end() - run.start()].append(run.start())

    def run_end(self, at: int) -> int:
        """Where the run of backticks holding `at` ends."""
        return self._ends[bisect_right(self._starts, at) - 1]

    def closing(self, at: int, end: int) -> int:
        """The end of the code span whose backticks open at `at` (those from `at` to the
        end of its run): after the next run of exactly as many; -1 when none closes it
        before `end` (a line's or a region's end, which never falls inside a run)."""
        run = self.run_end(at)
        length = run - at
        starts = self._by_length.get(length, [])
        i = bisect_left(starts, run)
        return starts[i] + length if i < len(starts) and starts[i] + length <= end else -1


def _closing(text: str, at: int, end: int) -> int:
    """`Backticks.closing`, found by searching text[at:end]."""
    run = at
    while run < len(text) and text[run] == "`":
        run += 1
    length = run - at
    pos = run
    # Each search starts just past a run, so what it finds starts a run.
    while (found := text.find("`" * length, pos, end)) >= 0:
        stop = found + length
        if stop == len(text) or text[stop] != "`":
            return stop
        while stop < len(text) and text[stop] == "`":  # a longer run: on past it
            stop += 1
        pos = stop
    return -1


class TextIndex:
    """What one scan of a text for links finds once and looks up many times: its runs
    of backticks, and (once it has read many Markdown links) where destinations end.
    So a page full of unclosed code spans or `[a](` runs is read in time linear in its
    size."""

    DIRECT_READS = 64  # destinations read directly before they are worth an index
    DIRECT_SPANS = 16  # code spans closed by a search of the text before runs are indexed

    def __init__(self, text: str) -> None:
        self.text = text
        self._backticks: Backticks | None = None
        self._destinations: Destinations | None = None
        self._reads = 0
        self._spans = 0

    def code_span_end(self, at: int, end: int) -> int:
        """`Backticks.closing` for this text (for its first few code spans, a search up
        to `end`: most pages have few, and a line's end comes soon)."""
        if self._backticks is None:
            self._spans += 1
            if self._spans <= self.DIRECT_SPANS:
                return _closing(self.text, at, end)
            self._backticks = Backticks(self.text)
        return self._backticks.closing(at, end)

    def destination_end(self, pos: int, end: int) -> int:
        """`link_destination` for this text."""
        if self._destinations is None:
            self._reads += 1
            if self._reads <= self.DIRECT_READS:
                return link_destination(self.text, pos, end)
            self._destinations = Destinations(self.text)
        return self._destinations.end(pos, end)


def link_title(text: str, pos: int, end: int) -> int:
    """After a link title (`"..."`, `'...'` or `(...)`) starting at `pos`; -1 if none."""
    closer = {'"': '"', "'": "'", "(": ")"}.get(text[pos])
    if closer is None:
        return -1
    pos += 1
    while pos < end:
        char = text[pos]
        if char == closer:
            return pos + 1
        if char == "(" and closer == ")":
            return -1
        pos += 2 if char == "\\" and pos + 1 < end else 1
    return -1


# -- headings ----------------------------------------------------------------------


class Heading(NamedTuple):
    """A heading: its level (1-6), its text, where its first line starts and where the
    line after it starts (offsets in the page's text)."""

    level: int
    title: str
    start: int
    end: int


def headings(text: str, start: int = 0) -> list[Heading]:
    """The headings of text[start:] outside containers and code (ATX `## Title` and
    setext), by markdown-it."""
    body = text[start:]
    if not any(mark in body for mark in "#=-"):
        return []
    starts = [*line_starts(body), len(body)]
    found: list[Heading] = []
    for opening, inline in pairwise(_md().parse(body)):
        if opening.type == "heading_open" and opening.level == 0 and opening.map:
            first, last = opening.map
            level, title = int(opening.tag[1:]), inline.content.strip()
            found.append(Heading(level, title, start + starts[first], start + starts[last]))
    return found
