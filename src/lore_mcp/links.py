"""The one link parser: wiki links, Markdown links and tags, found once, used for all.

Indexing, rewriting, backlinks and unlinked mentions all ask `scan` what a page holds.
The block structure (`markdown`) says which text is prose; the prose is then read
straight from the source, left to right as markdown-it reads inline text (escapes, code
spans, HTML and autolinks hide what they hold), so every link carries its exact place
in the text and a rewrite replaces exactly those characters. Frontmatter is not prose:
only its wiki links count (Obsidian's property links). Pure functions, no I/O.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from itertools import pairwise
from typing import NamedTuple
from urllib.parse import unquote

from lore_mcp import frontmatter, markdown

_WIKI = re.compile(r"!?\[\[([^\[\]\n\r]+)\]\]")
LONG_LINE = 65_536  # characters: a line this long takes the scan by markdown-it's structure
_SPECIAL = re.compile(r"[\\`\[!<#]")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# Inline HTML, comments and autolinks: their text is never a link, a tag or a mention.
_ATTRIBUTE = (  # CommonMark's: a name, then maybe `=` and a value, quoted or not
    r"\s+[A-Za-z_:][A-Za-z0-9:._-]*"
    r"(?:\s*=\s*(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\"))?"
)
_HTML = (
    rf"<[A-Za-z][A-Za-z0-9-]*(?:{_ATTRIBUTE})*\s*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*\s*>"
    r"|<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*>"
    r"|<[^<>\s@]+@[^<>\s]+>"
)
_OPAQUE_TAG = re.compile(r"<!--.*?-->|" + _HTML, re.DOTALL)
_OPAQUE_NO_COMMENT = re.compile(_HTML)  # when no `-->` is left, no comment can close
_TAG = re.compile(r"#([\w/-]+)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:|//")
# The file formats Obsidian opens itself: a link to one is an attachment, not a page.
ATTACHMENTS = frozenset(
    {"avif", "bmp", "gif", "jpeg", "jpg", "png", "svg", "webp"}  # images
    | {"flac", "m4a", "mp3", "ogg", "wav", "webm", "3gp"}  # audio
    | {"mkv", "mov", "mp4", "ogv"}  # video
    | {"pdf", "canvas", "base"}
)


class Link(NamedTuple):
    """One `[[...]]`, `![[...]]`, `[text](target)` or `![alt](target)`: the target as
    written (a Markdown link's URL-decoded), its alias (a Markdown link's text) and
    fragment, its 1-based line, and where the target stands in the text (`start`,
    `end`: for a Markdown link, the path as written, encoded or not). A named tuple:
    a page may hold thousands, made five times faster than a frozen dataclass."""

    target: str
    alias: str | None
    fragment: str | None
    embed: bool
    line: int
    start: int = 0
    end: int = 0
    markdown: bool = False

    @property
    def is_same_page(self) -> bool:
        """`[[#heading]]` points into the page it is written on: not a graph edge."""
        return self.target == ""

    @property
    def is_attachment(self) -> bool:
        """A file Obsidian opens itself (`diagram.png`, `report.PDF`, `board.canvas`)."""
        if "." not in self.target:  # most links: no extension at all
            return False
        name = self.target.replace("\\", "/").rpartition("/")[2]
        return name.rpartition(".")[2].lower() in ATTACHMENTS if "." in name else False


@dataclass(slots=True)
class Scan:
    """What a page holds: its links and tags, in order; the spans (start, end) of its
    text that are not prose (code, HTML, links), and the prose itself."""

    text: str
    links: list[Link] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    opaque: list[tuple[int, int]] = field(default_factory=list)
    regions: markdown.Regions = field(default_factory=list)
    frontmatter_end: int = 0
    _starts: list[int] = field(default_factory=list, repr=False)
    _counted: tuple[int, int] | None = field(default=None, repr=False)  # (offset, line)

    def line(self, offset: int) -> int:
        """The 1-based line of an offset in the text. In a text without a carriage
        return, the line breaks are counted on from the offset asked before when this
        one is further on (links are found in order), with no list of every line."""
        if self._counted is None and not self._starts:
            if "\r" in self.text:
                self._starts = markdown.line_starts(self.text)
            else:
                self._counted = (0, 1)
        if self._counted is None:
            return bisect_right(self._starts, offset)
        at, line = self._counted if offset >= self._counted[0] else (0, 1)
        line += self.text.count("\n", at, offset)
        self._counted = (offset, line)
        return line

    def line_at(self, offset: int) -> str:
        """The text of the line holding `offset`, without its line break."""
        text = self.text
        return text[markdown.line_start(text, offset) : markdown.line_end(text, offset, len(text))]


def scan(text: str, *, full: bool = False) -> Scan:
    """Every link and tag outside code, with its place in `text`. `full` always asks
    markdown-it for the structure; else the line scan answers where it can (not on a
    page with a line so long that the line scan would likely give up only at its end,
    having done the work for nothing)."""
    quick = not full and not _has_long_line(text)
    return (line_scan(text) if quick else None) or full_scan(text)


def _has_long_line(text: str) -> bool:
    if len(text) < LONG_LINE:
        return False
    starts = [*markdown.line_starts(text), len(text)]
    return any(b - a >= LONG_LINE for a, b in pairwise(starts))


def full_scan(text: str) -> Scan:
    """The scan with markdown-it's block structure."""
    start = frontmatter.extent(text)
    return _read(text, markdown.parsed_regions(text, start), _frontmatter(text, start), False)


def line_scan(text: str) -> Scan | None:
    """The scan with the plain structure (`markdown.simple_regions`), read line by line;
    None when the page needs markdown-it, or a line holds something that may end on
    another line."""
    start = frontmatter.extent(text)
    regions = markdown.simple_regions(text, start)
    if regions is None:
        return None
    try:
        return _read(text, regions, _frontmatter(text, start), True)
    except _Undecided:
        return None


def extract_links(text: str) -> list[Link]:
    """Every link outside code, in document order."""
    if "[" not in text:
        return []
    return scan(text).links


class _Undecided(Exception):
    """A line holds something that may end on a later line: the line scan gives up."""


def _frontmatter(text: str, end: int) -> Scan:
    """A scan holding the wiki links of the frontmatter, which ends at `end`."""
    found = Scan(text, frontmatter_end=end)
    for match in _WIKI.finditer(text, 0, end):
        _add_wiki(text, match, found)
    return found


def _read(text: str, regions: markdown.Regions, found: Scan, strict: bool) -> Scan:
    found.regions = regions
    index = markdown.TextIndex(text)
    for start, end in regions:
        _read_prose(text, (start, end), found, strict, index)
    return found


def _read_prose(
    text: str, region: tuple[int, int], found: Scan, strict: bool, index: markdown.TextIndex
) -> None:
    """The links and tags in the `region` (start, end) of the text. `strict`: nothing
    may reach past the end of its line; where the answer depends on a later line,
    raise `_Undecided`."""
    start, end = region
    pos = start
    skip_from, skip_to = -1, -1  # a Markdown link's destination: not prose
    labels: dict[int, int] = {}  # what `_label_end` found, so no label is read twice
    comment_close = -2  # where the next `-->` starts; -1: there is none; -2: not looked
    limit = end if not strict else -1  # where the line being read ends
    while (special := _SPECIAL.search(text, pos, end)) is not None:
        at = special.start()
        if skip_from <= at < skip_to:
            pos = skip_to
            continue
        if at > limit:
            limit = markdown.line_end(text, at, end)
        char = text[at]
        if char == "\\":
            pos = at + 2 if at + 1 < end and text[at + 1] in _ESCAPABLE else at + 1
        elif char == "`":
            close = _code_span_end(index, at, limit, strict)
            pos = _run_end(text, at, end) if close < 0 else close
            if close >= 0:
                found.opaque.append((at, close))
        elif char == "<":
            if comment_close != -1 and comment_close < at:
                comment_close = text.find("-->", at, end)
            tag = (_OPAQUE_TAG if comment_close >= 0 else _OPAQUE_NO_COMMENT).match(text, at, end)
            if tag is not None:
                found.opaque.append((at, tag.end()))
            pos = at + 1 if tag is None else tag.end()
        elif char == "#":
            pos = _tag(text, at, end, start, found)
        else:
            wiki = _WIKI.match(text, at, end)
            if wiki is not None and _add_wiki(text, wiki, found):
                pos = wiki.end()
                continue
            parts = _markdown_link(index, at, limit, strict, labels) if char == "[" else None
            if parts is not None:
                skip_from, skip_to = parts[1], parts[2]
                _add_markdown(text, at, parts, found)
            pos = at + 1


def _tag(text: str, at: int, end: int, start: int, found: Scan) -> int:
    """An inline `#tag`: after a space or at the start, not only digits."""
    if at > start and not text[at - 1].isspace():
        return at + 1
    match = _TAG.match(text, at, end)
    if match is None:
        return at + 1
    tag = match.group(1).rstrip("/")
    if tag and not tag.isdigit():
        found.tags.append(tag)
    return match.end()


def _run_end(text: str, at: int, end: int) -> int:
    """Where the run of backticks starting at `at` ends."""
    while at < end and text[at] == "`":
        at += 1
    return at


def _code_span_end(index: markdown.TextIndex, at: int, end: int, strict: bool) -> int:
    """The end of the code span whose backticks open at `at`: after the next run of as
    many backticks (exactly); -1 when none closes it before `end`."""
    close = index.code_span_end(at, end)
    if close < 0 and strict:
        raise _Undecided
    return close


# -- wiki links ----------------------------------------------------------------------------


def _add_wiki(text: str, match: re.Match[str], found: Scan) -> bool:
    """Add the wiki link `match` holds; False when it is not one (`[[]]`, `[[|x]]`)."""
    raw = match.group()
    prefix = 3 if raw.startswith("!") else 2
    head, pipe, alias = raw[prefix:-2].partition("|")
    if pipe and head.endswith("\\"):  # `\|`, the pipe escaped for tables
        head = head[:-1]
    # Only `#` starts a fragment (`[[Page#Heading]]`, `[[Page#^block]]`): Obsidian reads
    # `[[Title^abc]]` as a link to a page of that name.
    target, _, rest = head.partition("#")
    target = target.strip()
    fragment = rest.strip() or None

    if not target and fragment is None:
        return False
    start = match.start() + prefix + len(head) - len(head.lstrip())
    line = found.line(start)
    link = Link(
        target, alias.strip() or None, fragment, prefix == 3, line, start, start + len(target)
    )
    found.links.append(link)
    found.opaque.append((match.start(), match.end()))
    return True


# -- Markdown links --------------------------------------------------------------------------


def _markdown_link(
    index: markdown.TextIndex, at: int, end: int, strict: bool, labels: dict[int, int]
) -> tuple[int, int, int, int, int] | None:
    """For a `[` that opens `[label](destination "title")`: where the label closes, where
    the parenthesis opens and closes, and where the destination stands (inside `<>`).
    None when it is not one. `labels` keeps what earlier calls with the same `end`
    found, so that a page full of brackets is read once, not once per bracket."""
    text = index.text
    label = _label_end(index, at, end, strict, labels)
    if label < 0 or label + 1 >= end or text[label + 1] != "(":
        return None
    first = markdown.skip_blanks(text, label + 2, end)
    after = index.destination_end(first, end) if first < end else first
    pos = markdown.skip_blanks(text, after, end)
    if after > first and after < pos < end and (titled := markdown.link_title(text, pos, end)) > 0:
        pos = markdown.skip_blanks(text, titled, end)
    if pos >= end or text[pos] != ")":
        if strict and pos >= end:
            raise _Undecided
        return None
    if after > first and text[first] == "<":
        first, after = first + 1, after - 1
    return label, label + 1, pos + 1, first, after


def _label_end(
    index: markdown.TextIndex, at: int, end: int, strict: bool, known: dict[int, int]
) -> int:
    """Where the `]` that closes the `[` at `at` stands; -1 when none does before `end`.
    Every `[` read on the way is recorded in `known` with its own answer: the reading
    from a later `[` goes through the same characters the same way."""
    if at in known:
        return known[at]
    text = index.text
    opened: list[int] = []
    pos = at
    while pos < end:
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == "`" and (close := _code_span_end(index, pos, end, strict)) > 0:
            pos = close
            continue
        if char == "[":
            opened.append(pos)
        elif char == "]":
            known[opened.pop()] = pos
            if not opened:
                return pos
        pos += 1
    if strict:
        raise _Undecided
    known.update(dict.fromkeys(opened, -1))
    return -1


def _add_markdown(text: str, at: int, parts: tuple[int, int, int, int, int], found: Scan) -> None:
    """Add a Markdown link whose destination is a page or a file in the vault: a relative
    path, not a URL, not only a `#heading`."""
    label_end, _, _, first, last = parts
    written = text[first:last]
    path, _, fragment = written.partition("#")
    if not path or path.endswith("/") or _SCHEME.match(path) or "[" in path or "]" in path:
        return
    target = unquote(path)
    if any(ord(char) < 32 for char in target):
        return
    embed = at > 0 and text[at - 1] == "!"
    label = text[at + 1 : label_end].strip() or None
    heading = unquote(fragment) or None
    link = Link(target, label, heading, embed, found.line(first), first, first + len(path), True)
    found.links.append(link)
