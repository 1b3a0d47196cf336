"""The one link parser: wiki links in Markdown, found once, used for everything.

Indexing, rewriting, backlinks and unlinked mentions all ask `scan` what a page holds.
markdown-it-py gives the block structure (which lines are prose, which are code, HTML
or a fence); the prose is then read straight from the source, so every link carries its
exact place in the text and a rewrite replaces exactly those characters. Pages with no
block structure worth parsing (prose, fences at the left margin, no indented code or
HTML) take a line scan instead of markdown-it; a property test holds the two to each
other.

Pure functions, no I/O.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

_WIKI = re.compile(r"!?\[\[([^\[\]\n\r]+)\]\]")
_SPECIAL = re.compile(r"[\\`\[!<]")
_BREAK = re.compile(r"\r\n?|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n?|\n)|[^\r\n]+")
_ESCAPABLE = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
# Inline HTML, comments and autolinks: their text is never a link or a mention.
_ATTRIBUTE = (  # CommonMark's: a name, then maybe `=` and a value, quoted or not
    r"\s+[A-Za-z_:][A-Za-z0-9:._-]*"
    r"(?:\s*=\s*(?:[^\"'=<>`\x00-\x20]+|'[^']*'|\"[^\"]*\"))?"
)
_TAG = (
    rf"<[A-Za-z][A-Za-z0-9-]*(?:{_ATTRIBUTE})*\s*/?>"
    r"|</[A-Za-z][A-Za-z0-9-]*\s*>"
    r"|<[A-Za-z][A-Za-z0-9+.-]{1,31}:[^<>\s]*>"
    r"|<[^<>\s@]+@[^<>\s]+>"
)
_OPAQUE_TAG = re.compile(r"<!--.*?-->|" + _TAG, re.DOTALL)
_OPAQUE_NO_COMMENT = re.compile(_TAG)  # when no `-->` is left, no comment can close
_EXTENSION = re.compile(r"\.(?=[0-9]*[A-Za-z])[A-Za-z0-9]{1,5}\Z")
_FORBIDDEN_IN_TARGET = frozenset("[]|#^\r\n")
# Pages without these take the line scan: indented code, HTML blocks, other fences.
_NEEDS_PARSER = ("\t", "    ", "<", "~~~")
_FENCE_PREFIX = frozenset(" >*+-0123456789.)")


@dataclass(frozen=True, slots=True)
class Link:
    """One `[[...]]` or `![[...]]`: the target as written (alias and fragment apart),
    its 1-based line, and where the target stands in the text (`start`, `end`)."""

    target: str
    alias: str | None
    fragment: str | None
    embed: bool
    line: int
    start: int = 0
    end: int = 0

    @property
    def is_same_page(self) -> bool:
        """`[[#heading]]` points into the page it is written on: not a graph edge."""
        return self.target == ""

    @property
    def is_attachment(self) -> bool:
        """`diagram.png`, `report.PDF`: a final 1-5 character extension that is not `.md`."""
        if self.target.lower().endswith(".md"):
            return False
        return _EXTENSION.search(self.target) is not None


@dataclass(frozen=True, slots=True)
class Scan:
    """What a page holds: its links, in order, and the spans (start, end) of its text
    that are not prose (code, HTML, links), for mention search."""

    links: list[Link]
    opaque: list[tuple[int, int]]
    regions: list[tuple[int, int]]  # the prose, as (start, end) offsets


def scan(text: str) -> Scan:
    """Every link outside code, with its place in `text`."""
    return _simple_scan(text) or _scan_regions(text, _parsed_regions(text))


def extract_links(text: str) -> list[Link]:
    """Every `[[...]]` and `![[...]]` outside code, in document order."""
    if "[[" not in text:
        return []
    return scan(text).links


# -- block structure -------------------------------------------------------------------


def _line_starts(text: str) -> list[int]:
    """Where each line starts; lines end at LF, CRLF or CR, as markdown-it counts them."""
    return [0] + [m.end() for m in _BREAK.finditer(text)]


def _line_end(text: str, at: int, end: int) -> int:
    """Where the line holding `at` ends (its line break, or `end`)."""
    found = _BREAK.search(text, at, end)
    return end if found is None else found.start()


@cache
def _md() -> MarkdownIt:
    """markdown-it for block structure only; built on first need, shared by threads."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table").disable(["inline", "reference"])
    md.parse("x")  # builds its rule caches before threads share it
    return md


def _parsed_regions(text: str) -> list[tuple[int, int]]:
    """The prose of `text` by markdown-it: the source lines of each inline token."""
    starts = _line_starts(text)
    regions: list[tuple[int, int]] = []
    for token in _md().parse(text):
        if token.type == "inline" and token.map:
            first, last = token.map
            region = (starts[first], starts[last] if last < len(starts) else len(text))
            if not regions or regions[-1] != region:  # table cells share their row
                regions.append(region)
    return regions


class _Undecided(Exception):
    """A line holds something that may end on a later line: the line scan gives up."""


def _simple_scan(text: str) -> Scan | None:
    """The scan of a page whose block structure is plain: no indented code, HTML, or
    fences but at the left margin, and nothing on a line (a code span, a Markdown link)
    that could end on another. None when markdown-it must find the structure."""
    if any(sign in text for sign in _NEEDS_PARSER):
        return None
    regions: list[tuple[int, int]] = []
    pos = search = 0
    while (at := text.find("```", search)) >= 0:
        line_start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
        line_end = _line_end(text, at, len(text))
        if line_start != at:
            if _FENCE_PREFIX.issuperset(text[line_start:at]):
                return None  # a fence in a list or quote, or indented
            search = line_end  # backticks inside a line: a code span, read as prose
            continue
        run = len(text[at:line_end]) - len(text[at:line_end].lstrip("`"))
        info = text[at + run : line_end]
        if "`" in info or "|" in info:
            return None  # a code span at the start of a line, or maybe a table row
        regions.append((pos, at))
        pos = search = _fence_end(text, run, line_end)
        if pos < 0:
            return None
    regions.append((pos, len(text)))
    try:
        return _scan_regions(text, regions, strict=True)
    except _Undecided:
        return None


def _fence_end(text: str, run: int, pos: int) -> int:
    """Where the text after the fence opened by `run` backticks (its content starting
    after `pos`) goes on: after the closing line (up to three spaces, at least `run`
    backticks, then only spaces); -1 when it never closes."""
    while (at := text.find("`" * run, pos)) >= 0:
        line_start = max(text.rfind("\n", 0, at), text.rfind("\r", 0, at)) + 1
        line_end = _line_end(text, at, len(text))
        tail = text[at:line_end].rstrip(" ")
        if at - line_start <= 3 and not text[line_start:at].strip(" ") and not tail.strip("`"):
            return line_end
        pos = line_end
    return -1


# -- the prose -------------------------------------------------------------------------


def _scan_regions(text: str, regions: list[tuple[int, int]], strict: bool = False) -> Scan:
    links: list[Link] = []
    opaque: list[tuple[int, int]] = []
    starts: list[int] = []
    for start, end in regions:
        for found, parts in _scan_prose(text, start, end, opaque, strict):
            starts = starts or _line_starts(text)
            links.append(_link(found, parts, bisect_right(starts, found.start())))
    return Scan(links, opaque, regions)


def _scan_prose(
    text: str, start: int, end: int, opaque: list[tuple[int, int]], strict: bool
) -> Iterator[tuple[re.Match[str], _Parts]]:
    """The wiki links in text[start:end], left to right as markdown-it reads inline
    text: escapes, code spans, HTML and Markdown link destinations hide what they hold.
    `strict`: nothing may reach past the end of its line; where the answer depends on
    a later line, raise `_Undecided`."""
    pos = start
    skip_at, skip_to = -1, -1  # a Markdown link destination ahead
    labels: dict[int, int] = {}  # what `_label_end` found, so no label is read twice
    comment_close = -2  # where the next `-->` starts; -1: there is none; -2: not looked
    while (special := _SPECIAL.search(text, pos, end)) is not None:
        at = special.start()
        if skip_at <= at < skip_to:  # inside a link destination: `(` itself is not special
            pos = skip_to
            continue
        char = text[at]
        if char == "\\":
            pos = at + 2 if at + 1 < end and text[at + 1] in _ESCAPABLE else at + 1
        elif char == "`":
            close = _code_span_end(text, at, _line_end(text, at, end) if strict else end, strict)
            if close < 0:
                pos = _run_end(text, at, end)
            else:
                opaque.append((at, close))
                pos = close
        elif char == "<":
            if comment_close != -1 and comment_close < at:
                comment_close = text.find("-->", at, end)
            tags = _OPAQUE_TAG if comment_close >= 0 else _OPAQUE_NO_COMMENT
            tag = tags.match(text, at, end)
            if tag is not None:
                opaque.append((at, tag.end()))
            pos = tag.end() if tag is not None else at + 1
        else:
            wiki = _WIKI.match(text, at, end)
            parts = _parse(wiki) if wiki is not None else None
            if wiki is not None and parts is not None:
                opaque.append((at, wiki.end()))
                yield wiki, parts
                pos = wiki.end()
                continue
            limit = _line_end(text, at, end) if strict else end
            if char == "[" and skip_at < at:
                dest = _destination(text, at, limit, strict, labels)
                if dest is not None:
                    skip_at, skip_to = dest
            pos = at + 1


def _run_end(text: str, at: int, end: int) -> int:
    """Where the run of backticks starting at `at` ends."""
    while at < end and text[at] == "`":
        at += 1
    return at


def _code_span_end(text: str, at: int, end: int, strict: bool) -> int:
    """The end of the code span whose backticks open at `at`: after the next run of as
    many backticks (exactly); -1 when none closes it before `end`."""
    run = _run_end(text, at, end)
    length, pos = run - at, run
    while (close := text.find("`", pos, end)) >= 0:
        pos = _run_end(text, close, end)
        if pos - close == length:
            return pos
    if strict:
        raise _Undecided
    return -1


def _destination(
    text: str, at: int, end: int, strict: bool, labels: dict[int, int]
) -> tuple[int, int] | None:
    """For a `[` that opens a Markdown link `[label](destination "title")`: where the
    part after the label starts and ends; None when it is not one. `labels` keeps what
    earlier calls with the same `end` found, so that a page full of brackets is read
    once, not once per bracket."""
    pos = _label_end(text, at, end, strict, labels)
    if pos < 0:
        return None
    if pos + 1 >= end or text[pos + 1] != "(":
        return None
    close = _link_tail(text, pos + 2, end)
    if close < 0 and strict:
        raise _Undecided
    return None if close < 0 else (pos + 1, close)


def _label_end(text: str, at: int, end: int, strict: bool, known: dict[int, int]) -> int:
    """Where the `]` that closes the `[` at `at` stands; -1 when none does before `end`.
    Every `[` read on the way is recorded in `known` with its own answer: the reading
    from a later `[` goes through the same characters the same way."""
    if at in known:
        return known[at]
    opened: list[int] = []
    pos = at
    while pos < end:
        char = text[pos]
        if char == "\\":
            pos += 2
            continue
        if char == "`":
            close = _code_span_end(text, pos, end, strict)
            if close > 0:
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


_BLANKS = frozenset(" \t\n\r")


def _skip_blanks(text: str, pos: int, end: int) -> int:
    while pos < end and text[pos] in _BLANKS:
        pos += 1
    return pos


def _link_tail(text: str, pos: int, end: int) -> int:
    """After the `)` that ends an inline link's destination and title, which start at
    `pos` (just after the `(`); -1 when they are not a destination and a title (then
    the brackets before are plain text). As markdown-it's link rule reads them: blanks,
    a destination (`<...>`, or no spaces and balanced parentheses), blanks, an optional
    title in quotes or parentheses, blanks, `)`. Any destination will do (markdown-it
    makes no link of `javascript:` and the like; links are not rendered here)."""
    pos = _skip_blanks(text, pos, end)
    if pos >= end:
        return -1
    after = _link_destination(text, pos, end)
    if after > pos:
        pos = spaced = _skip_blanks(text, after, end)
        if after < spaced < end and (titled := _link_title(text, spaced, end)) > 0:
            pos = _skip_blanks(text, titled, end)
    return pos + 1 if pos < end and text[pos] == ")" else -1


def _link_destination(text: str, pos: int, end: int) -> int:
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


def _link_title(text: str, pos: int, end: int) -> int:
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


# -- one link --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Parts:
    target: str
    alias: str | None
    fragment: str | None
    target_start: int  # offset of the target within the match


def _parse(match: re.Match[str]) -> _Parts | None:
    raw = match.group()
    prefix = 3 if raw.startswith("!") else 2
    body = raw[prefix:-2]
    head, pipe, alias = body.partition("|")
    if pipe and head.endswith("\\"):  # `\|`, the pipe escaped for tables
        head = head[:-1]
    cut = min((i for i in (head.find("#"), head.find("^")) if i >= 0), default=len(head))
    target = head[:cut].strip()
    rest = head[cut + 1 :] if head[cut : cut + 1] == "#" else head[cut:]  # `^block` keeps `^`
    fragment = rest.strip() or None
    if not target and fragment is None:
        return None
    return _Parts(target, alias.strip() or None, fragment, prefix + len(head) - len(head.lstrip()))


def _link(match: re.Match[str], parts: _Parts, line: int) -> Link:
    start = match.start() + parts.target_start
    embed = match.group().startswith("!")
    return Link(
        parts.target, parts.alias, parts.fragment, embed, line, start, start + len(parts.target)
    )


# -- rewriting -------------------------------------------------------------------------


def is_valid_target(target: str) -> bool:
    """Whether `target` can stand inside `[[...]]` and mean the same when read back."""
    return bool(target.strip()) and not _FORBIDDEN_IN_TARGET.intersection(target)


def rewrite_links(text: str, new_targets: Mapping[int, str]) -> str:
    """Replace the targets of the links numbered as in `extract_links`; nothing else changes."""
    for new in new_targets.values():
        if not is_valid_target(new):
            raise ValueError(f"not a valid link target: {new!r}")
    found = extract_links(text)
    if any(not 0 <= i < len(found) for i in new_targets):
        raise IndexError(f"link index out of range: the page has {len(found)} links")
    return replace_spans(
        text, {(found[i].start, found[i].end): new for i, new in new_targets.items()}
    )


def replace_spans(text: str, changes: Mapping[tuple[int, int], str]) -> str:
    """`text` with each (start, end) span replaced; the spans must not overlap."""
    pieces: list[str] = []
    done = 0
    for (start, end), new in sorted(changes.items()):
        pieces += [text[done:start], new]
        done = end
    return "".join([*pieces, text[done:]])


# -- mentions --------------------------------------------------------------------------

# Scripts written without spaces between words: no word boundary is required next to them.
_UNSPACED = (  # Thai, Lao, Myanmar, Khmer, kana, CJK ideographs, Hangul
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_WORD = f"[^\\W_{_UNSPACED}]"


def _mention_pattern(phrase: str) -> re.Pattern[str] | None:
    words = phrase.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(word) for word in words)
    left = f"(?<!{_WORD})" if re.match(_WORD, words[0][0]) else ""
    right = f"(?!{_WORD})" if re.match(_WORD, words[-1][-1]) else ""
    return re.compile(left + body + right, re.IGNORECASE)


def find_mentions(text: str, phrase: str) -> list[tuple[int, str]]:
    """Lines where `phrase` appears as words in prose (not in code or links), in order."""
    pattern = _mention_pattern(phrase)
    if pattern is None or not pattern.search(text):
        return []
    page = _scan_regions(text, _parsed_regions(text))
    starts = _line_starts(text)
    masked = list(text)
    for start, end in page.opaque:
        masked[start:end] = re.sub(r"[^\r\n]", " ", text[start:end])
    prose = "".join(masked)
    found: set[int] = set()
    for start, end in page.regions:
        found.update(bisect_right(starts, m.start()) for m in pattern.finditer(prose, start, end))
    lines = source_lines(text)
    return [(n, lines[n - 1]) for n in sorted(found)]


def source_lines(text: str) -> list[str]:
    """The lines as links count them: split at LF, CRLF and CR only."""
    return _BREAK.split(text)


def line_text(text: str, line: int) -> str:
    """The 1-based line's text without its line break; `""` when out of range."""
    lines = source_lines(text)
    return lines[line - 1] if 1 <= line <= len(lines) else ""


def split_lines(text: str) -> list[str]:
    """The lines with their line breaks (LF, CRLF or CR, as links count lines)."""
    return _LINE.findall(text)
