"""Changes to a page that do not send it whole: append, prepend, replace one occurrence
of a text, replace a section. Pure functions on the page's text, no I/O.

Each keeps every character it was not asked to change (line breaks, a byte-order mark,
the frontmatter), and where it must put a line break between the old text and the new,
it uses the page's own (CRLF in a CRLF page). A change that cannot be made exactly
fails with an `InvalidArgumentError` that says what was found, so the agent can repeat
the call with what it needs; the caller writes nothing then.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from typing import Literal, get_args

from lore_mcp import frontmatter, markdown
from lore_mcp.errors import InvalidArgumentError

Mode = Literal["replace", "append", "prepend", "edit", "section"]
MODES: tuple[str, ...] = get_args(Mode)
BOM = "\ufeff"
SHOWN_LINES = 10  # line numbers listed for a text found several times
SHOWN_HEADINGS = 40  # headings listed when a heading is not found
_BLANK_LINES = re.compile(r"(?:[ \t]*(?:\r\n?|\n))*")
_LINE_END = re.compile(r"[ \t]*(?:\r\n?|\n)")


@dataclass(frozen=True, slots=True)
class Edit:
    """One change asked for: how (`mode`), the new text, and for `edit` the text it
    replaces, for `section` the heading of the section."""

    mode: Mode = "replace"
    content: str = ""
    old_text: str | None = None
    heading: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise InvalidArgumentError(
                f"mode={self.mode!r} is not a mode; use one of {', '.join(MODES)}."
            )
        if self.old_text is not None and self.mode != "edit":
            raise InvalidArgumentError(
                "old_text goes with mode='edit' only; repeat the call with mode='edit', or "
                "without old_text."
            )
        if self.heading is not None and self.mode != "section":
            raise InvalidArgumentError(
                "heading goes with mode='section' only; repeat the call with "
                "mode='section', or without heading."
            )
        if self.mode == "edit" and not self.old_text:
            raise InvalidArgumentError(
                "mode='edit' needs old_text: the exact text to replace, found once in the page."
            )
        if self.mode == "section" and not (self.heading or "").strip("# \t"):
            raise InvalidArgumentError(
                "mode='section' needs heading: the heading of the section to replace "
                "('## Decisions', or just 'Decisions')."
            )

    @property
    def partial(self) -> bool:
        """Whether the change keeps part of the page (every mode but replace)."""
        return self.mode != "replace"


def apply(edit: Edit, text: str) -> str:
    """The page's text `text` after `edit`."""
    match edit.mode:
        case "append":
            return append(text, edit.content)
        case "prepend":
            return prepend(text, edit.content)
        case "edit":
            assert edit.old_text is not None
            return replace_once(text, edit.old_text, edit.content)
        case "section":
            assert edit.heading is not None
            return replace_section(text, edit.heading, edit.content)
    return edit.content


def line_break(text: str) -> str:
    """The page's own line break: its first one, else LF."""
    found = markdown.BREAK.search(text)
    return "\n" if found is None else found.group()


def _ends_a_line(text: str) -> bool:
    return text.endswith(("\n", "\r")) or text in ("", BOM)


def append(text: str, addition: str) -> str:
    """`addition` at the end of the page, on a line of its own: a line break goes
    between when the page does not end with one."""
    if not addition:
        return text
    return text + ("" if _ends_a_line(text) else line_break(text)) + addition


def body_start(text: str) -> int:
    """Where the page's body starts: after its frontmatter, else after a byte-order mark."""
    return frontmatter.extent(text) or (1 if text.startswith(BOM) else 0)


def prepend(text: str, addition: str) -> str:
    """`addition` at the start of the page's body (after its frontmatter), with a line
    break between it and the old text when it does not end with one."""
    if not addition:
        return text
    at = body_start(text)
    head, body = text[:at], text[at:]
    nl = line_break(text)
    if not _ends_a_line(head):
        head += nl  # frontmatter closed at the very end, without a line break
    if body and not _ends_a_line(addition):
        addition += nl
    return head + addition + body


def _line_of(starts: list[int], at: int) -> int:
    return bisect_right(starts, at)


def _occurrences(text: str, old: str) -> list[int]:
    """Where `old` starts in `text`, overlapping occurrences included."""
    found: list[int] = []
    at = text.find(old)
    while at >= 0:
        found.append(at)
        at = text.find(old, at + 1)
    return found


def replace_once(text: str, old: str, new: str) -> str:
    """`text` with the one occurrence of `old` replaced by `new`. In a page whose line
    breaks are CRLF, `old` and `new` written with LF match as if written with CRLF."""
    found = _occurrences(text, old)
    if not found and "\r\n" in text and "\n" in old and "\r" not in old:
        old, new = old.replace("\n", "\r\n"), new.replace("\r\n", "\n").replace("\n", "\r\n")
        found = _occurrences(text, old)
    if len(found) == 1:
        return text[: found[0]] + new + text[found[0] + len(old) :]
    starts = markdown.line_starts(text)
    if not found:
        raise InvalidArgumentError(
            "old_text was not found in the page, so nothing was written."
            + _near(text, old)
            + " Read the page and copy the text to replace exactly, spaces and line "
            "breaks included."
        )
    lines = list(dict.fromkeys(_line_of(starts, at) for at in found))
    shown = ", ".join(map(str, lines[:SHOWN_LINES])) + (", ..." if len(lines) > SHOWN_LINES else "")
    raise InvalidArgumentError(
        f"old_text occurs {len(found)} times in the page (starting on lines {shown}), so "
        "nothing was written. Repeat the call with more of the text around the one you "
        "mean in old_text (and in content), so that it occurs once."
    )


def _near(text: str, old: str) -> str:
    """Where the first line of `old` does occur, if it does: a hint for a near miss."""
    first = next((line.strip() for line in markdown.source_lines(old) if line.strip()), "")
    if not first or first == old or (at := text.find(first)) < 0:
        return ""
    line = _line_of(markdown.line_starts(text), at)
    return f" (Its first line, {first[:80]!r}, is on line {line}; the rest differs.)"


def _wanted(heading: str) -> tuple[int | None, str]:
    """The level (if given, as `##`) and the text of the heading asked for."""
    bare = heading.strip()
    marks = len(bare) - len(bare.lstrip("#"))
    if 1 <= marks <= 6 and bare[marks : marks + 1] in (" ", "\t"):
        return marks, bare[marks:].strip().rstrip("#").strip()
    return None, bare


def _fold(title: str) -> str:
    return " ".join(title.split()).casefold()


def find_section(text: str, heading: str) -> tuple[markdown.Heading, int]:
    """The heading `heading` names ('## Decisions' or 'Decisions') and where its section
    ends: at the next heading of the same or a higher level, else at the end."""
    found = markdown.headings(text, body_start(text))
    level, title = _wanted(heading)
    fits = [h for h in found if level is None or h.level == level]
    matches = [h for h in fits if h.title == title] or [
        h for h in fits if _fold(h.title) == _fold(title)
    ]
    if len(matches) != 1:
        raise InvalidArgumentError(_no_section(text, heading, matches, found))
    chosen = matches[0]
    later = (h.start for h in found if h.start > chosen.start and h.level <= chosen.level)
    return chosen, next(later, len(text))


def _no_section(
    text: str, heading: str, matches: list[markdown.Heading], found: list[markdown.Heading]
) -> str:
    if not found:
        return f"The page has no headings, so there is no section {heading!r}. Nothing was written."
    starts = markdown.line_starts(text)

    def named(h: markdown.Heading) -> str:
        return f"{'#' * h.level} {h.title} (line {_line_of(starts, h.start)})"

    listed = "; ".join(map(named, found[:SHOWN_HEADINGS]))
    more = f"; and {len(found) - SHOWN_HEADINGS} more" if len(found) > SHOWN_HEADINGS else ""
    headings = f"Its headings: {listed}{more}."
    if not matches:
        return f"The page has no heading {heading!r}, so nothing was written. {headings}"
    lines = ", ".join(str(_line_of(starts, h.start)) for h in matches)
    return (
        f"heading {heading!r} matches {len(matches)} headings (on lines {lines}), so nothing "
        f"was written. {headings} Give its level ('## Title') if that tells them apart; "
        "else change the text with mode='edit'."
    )


def replace_section(text: str, heading: str, body: str) -> str:
    """`text` with the body of the section under `heading` (up to the next heading of
    the same or a higher level; its subsections with it) replaced by `body`. The blank
    lines around the old body stay. A `body` that starts with that same heading
    replaces the heading line too."""
    chosen, end = find_section(text, heading)
    start, stop = _without_blank_lines(text, chosen.end, end)
    own = markdown.headings(body)
    if own and own[0].start == 0 and (own[0].level, own[0].title) == chosen[:2]:
        start = chosen.start
    elif not _ends_a_line(text[:start]):
        body = line_break(text) + body  # the heading is the page's last line
    if body and not _ends_a_line(body) and (stop < len(text) or _ends_a_line(text[:stop])):
        body += line_break(text)  # as the old body did, or a heading follows
    return text[:start] + body + text[stop:]


def _without_blank_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """The span text[start:end] without the blank lines it starts and ends with (all of
    it when it holds nothing else)."""
    first = _BLANK_LINES.match(text, start, end)
    last = len(text[start:end].rstrip(" \t\r\n")) + start
    if first is None or last <= first.end():
        return start, end
    after = _LINE_END.match(text, last, end)
    return first.end(), last if after is None else after.end()
