"""Wiki links in Markdown: find them, rewrite their targets, find unlinked mentions.

Pure functions, no I/O. Links are found by an inline rule added to markdown-it, so a
`[[...]]` in code (inline, fenced or indented) or escaped as `\\[[` is never a link.
Every inline token carries `map[0]`, the source line it starts on; the rule records each
link's offset in the token's content, so its line is `map[0]` plus the newlines before it.
Rewriting finds each link in its source line by counting occurrences of its text.

Most pages never reach the parser: prose, fences at the left margin and code spans that
close on their line are read by a plain scan that finds the same links (see `_fast_links`;
a property test holds the two to each other). markdown-it is imported on first need.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_core import StateCore
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

_LINK = re.compile(r"!?\[\[([^\[\]\n]+)\]\]")
_EXTENSION = re.compile(r"\.(?=[0-9]*[A-Za-z])[A-Za-z0-9]{1,5}\Z")
_NEWLINE = re.compile(r"(\r\n?|\n)")  # markdown-it's own line breaks; the group keeps them
# Scripts written without spaces between words: no word boundary is required next to them.
_UNSPACED = (  # Thai, Lao, Myanmar, Khmer, kana, CJK ideographs, Hangul
    "\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u3040-\u30ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f"
)
_WORD = f"[^\\W_{_UNSPACED}]"
_FORBIDDEN_IN_TARGET = frozenset("[]|#^\r\n")
_BASE = "lore_links_base"  # env key: offset of a nested image-alt parse in the outer source
_MASK = "lore_links_mask"  # token meta key: (start, end) of code, HTML or an autolink
_WANTED = "lore_links_wanted"  # env key: which inline tokens to parse


@dataclass(frozen=True, slots=True)
class Link:
    """One `[[...]]` or `![[...]]`, in document order."""

    target: str
    alias: str | None
    fragment: str | None
    embed: bool
    line: int

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
class _Parsed:
    offset: int  # where `raw` starts in the inline token's content
    raw: str
    target_span: tuple[int, int]  # the target's place inside `raw`
    target: str
    alias: str | None
    fragment: str | None


def _parse(raw: str, offset: int) -> _Parsed | None:
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
    start = prefix + len(head) - len(head.lstrip())
    span = (start, start + len(target))
    return _Parsed(offset, raw, span, target, alias.strip() or None, fragment)


def _base(state: StateInline) -> int:
    base: int = state.env.get(_BASE, 0)
    return base


def _wikilink_rule(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] not in "[!":
        return False
    match = _LINK.match(state.src, state.pos, state.posMax)
    parsed = _parse(match.group(), _base(state) + state.pos) if match else None
    if match is None or parsed is None:
        return False
    if not silent:
        state.push("wikilink", "", 0).meta["wikilink"] = parsed
    state.pos = match.end()
    return True


def _image_rule(state: StateInline, silent: bool) -> bool:
    from markdown_it.rules_inline import image

    # markdown-it parses image alt text as a separate source: remember where it starts.
    outer = _base(state)
    state.env[_BASE] = outer + state.pos + 2
    try:
        return image(state, silent)
    finally:
        state.env[_BASE] = outer


def _opaque_rule(state: StateInline, silent: bool) -> bool:
    """Code spans, autolinks and inline HTML, marked so that mentions skip them."""
    from markdown_it.rules_inline import autolink, backtick, html_inline

    char, start, count = state.src[state.pos], state.pos, len(state.tokens)
    if char == "`":
        found = backtick(state, silent)
    else:
        found = char == "<" and (autolink(state, silent) or html_inline(state, silent))
    if found and not silent and len(state.tokens) > count:
        state.tokens[-1].meta[_MASK] = (_base(state) + start, _base(state) + state.pos)
    return found


def _inline_rule(state: StateCore) -> None:
    # Parses only the inline tokens that can hold what the caller is looking for.
    wanted: Callable[[str], bool] = state.env[_WANTED]
    for token in state.tokens:
        if token.type == "inline" and wanted(token.content):
            token.children = []
            state.md.inline.parse(token.content, state.md, state.env, token.children)


@cache
def _md() -> MarkdownIt:
    """The parser, built on first use: most pages never need it (see `_fast_links`), and
    a process that never does skips importing markdown-it. Never changed once built, so
    threads share it."""
    from markdown_it import MarkdownIt

    class _Parser(MarkdownIt):
        """Only tokens are needed, never HTML, so link URLs are taken as written."""

        def normalizeLink(self, url: str) -> str:
            return url

        def validateLink(self, url: str) -> bool:
            return True

    md = _Parser("commonmark").enable("table")
    md.disable(["lheading", "reference"])
    # Emphasis and entities never hide or form links: skip their work.
    md.disable(["emphasis", "entity", "balance_pairs", "fragments_join", "text_join"])
    md.disable(["autolink", "html_inline"])  # done by `_opaque_rule`
    md.core.ruler.at("inline", _inline_rule)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.at("image", _image_rule)
    md.inline.ruler.at("backticks", _opaque_rule)
    md.parse("[[x]]", {_WANTED: _has_link})  # builds the rule caches before threads share md
    return md


def _has_link(text: str) -> bool:
    return "[[" in text


def _descendants(tokens: list[Token]) -> Iterator[Token]:
    for token in tokens:
        yield token
        if token.children:  # image alt text
            yield from _descendants(token.children)


@dataclass(slots=True)
class _Block:
    """One inline token: its content, the 0-based source line it starts on, its links."""

    token: Token
    first: int
    in_table: bool
    links: list[_Parsed]
    breaks: list[int] | None = None  # offsets of the newlines in the content, when needed

    def line(self, offset: int) -> int:
        """The 0-based source line of an offset in the content."""
        if self.breaks is None:
            self.breaks = [m.start() for m in re.finditer("\n", self.token.content)]
        return self.first + bisect_left(self.breaks, offset)


def _blocks(markdown: str, wanted: Callable[[str], bool] = _has_link) -> Iterator[_Block]:
    """Every inline token; only those whose content is `wanted` are parsed for links."""
    tokens = _md().parse(markdown, {_WANTED: wanted})
    source: list[str] = []  # the source lines, split only if a block needs them
    for opener, token in itertools.pairwise(tokens):
        if token.type == "inline" and token.map:
            first = token.map[0]
            if token.content.count("\n") + 1 < token.map[1] - first:  # lines were trimmed
                source = source or _NEWLINE.split(markdown.replace("\0", "\ufffd"))[::2]
                first = _first_line(token, source)
            children = _descendants(token.children or [])
            found = [t.meta["wikilink"] for t in children if "wikilink" in t.meta]
            yield _Block(token, first, opener.type in ("th_open", "td_open"), found)


def _first_line(token: Token, source: list[str]) -> int:
    """The 0-based source line of the content's first line.

    markdown-it trims whitespace such as NBSP or U+3000 around a paragraph's text, which can
    drop whole lines before it: the first line is then the first that holds the text.
    """
    assert token.map is not None
    start, end = token.map
    head = token.content.partition("\n")[0]
    return next((n for n in range(start, end) if head in source[n]), start)


# -- the fast path -------------------------------------------------------------------------
#
# Most pages are prose, fenced code at the left margin and code spans that close on the line
# they open. markdown-it finds the same links there as a left-to-right scan of each line, so
# such pages skip the parser. Anything else that can make `[[x]]` text rather than a link, or
# that the scan would have to reason about, sends the page to the parser: HTML and autolinks
# (`<`), escapes (`\\`), indented code (a tab or four spaces, also after a list marker or
# `>`), link destinations (`](`), tables, fences inside containers or after indentation, and
# code spans that do not close on their line.

_TABLE_DELIMITER = re.compile(r"\|[ ]*:?-|-:?[ ]*\|")
_LINK_AT = re.compile(r"\[\[[^\[\]\n]+\]\]")
_FENCE_PREFIX = frozenset(" >*+-0123456789.)")  # what may stand before a fence in a container


def _fast_links(markdown: str) -> list[Link] | None:
    """The links of a page the scan can read exactly as markdown-it does; None otherwise."""
    text = markdown.replace("\0", "\ufffd") if "\0" in markdown else markdown
    if "\r" in text:
        text = _NEWLINE.sub("\n", text)  # as markdown-it sees it
    found: list[Link] = []
    pos, line = 0, 1
    while pos < len(text):
        fence = _next_fence(text, pos)
        if fence is None:
            return None
        start, end = fence
        if not _prose_links(text, pos, start, line, found):
            return None
        line += text.count("\n", pos, end)
        pos = end
    return found


def _next_fence(text: str, pos: int) -> tuple[int, int] | None:
    """(start, end) of the next fenced block at the left margin from `pos`, fence lines
    included; (len, len) when there is none; None when a fence the scan cannot place
    (indented, in a container, or an info string that makes it something else) comes first."""
    search = pos
    while True:
        found = [i for i in (text.find("```", search), text.find("~~~", search)) if i >= 0]
        if not found:
            return len(text), len(text)
        at = min(found)
        line_start = text.rfind("\n", pos, at) + 1 or pos
        if line_start != at:
            if _FENCE_PREFIX.issuperset(text[line_start:at]) or text[at] == "~":
                return None  # a fence in a list or quote, or indented; or `~~~` in prose
            search = text.find("\n", at)  # three backticks inside a line: a code span
            if search < 0:
                return len(text), len(text)
            continue
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        marker, opening = text[at], text[at:line_end]
        info = opening.lstrip(marker)
        run = len(opening) - len(info)
        if (marker == "`" and "`" in info) or "|" in info:
            return None  # inline code at the start of a line, or maybe a table's header row
        return at, _fence_end(text, marker * run, line_end + 1)


def _fence_end(text: str, markers: str, pos: int) -> int:
    """Where the fence whose content starts at `pos` ends: after its closing line (up to
    three spaces, at least as many markers, then only spaces and tabs), or the text's end."""
    while pos < len(text):
        at = text.find(markers, pos)
        if at < 0:
            break
        line_start = text.rfind("\n", 0, at) + 1
        line_end = text.find("\n", at)
        line_end = len(text) if line_end < 0 else line_end
        indent = text[line_start:at]  # the content starts on a line: never before `pos`
        tail = text[at:line_end].rstrip(" \t")
        if len(indent) <= 3 and not indent.strip(" ") and tail == markers[0] * len(tail):
            return min(line_end + 1, len(text))
        pos = line_end + 1
    return len(text)


def _prose_links(text: str, start: int, end: int, line: int, found: list[Link]) -> bool:
    """Add the links of the prose in `text[start:end]` (starting on `line`) to `found`;
    False when it holds something only the parser can read."""
    chunk = text[start:end]  # checked even without links: it decides where fences are
    for sign in ("<", "\\", "\t", "](", "    ", "~~~"):
        if sign in chunk:
            return False
    if "|" in chunk and _TABLE_DELIMITER.search(chunk):
        return False
    pos, counted, link, code = start, start, -1, -1
    while True:
        if link < pos:
            link = text.find("[[", pos, end)
            link = end if link < 0 else link
        if code < pos:
            code = text.find("`", pos, end)
            code = end if code < 0 else code
        if code < link:
            pos = _code_span_end(text, code, end)
            if pos < 0:
                return False
            continue
        if link == end:
            return True
        match = _LINK_AT.match(text, link, end)
        embed = link > pos and text[link - 1] == "!"
        raw = ("!" if embed else "") + match.group() if match else ""
        parsed = _parse(raw, link) if match else None
        if match is None or parsed is None:  # markdown-it moves on by one character
            pos = link + 1
            continue
        line += text.count("\n", counted, link)
        counted = link
        found.append(Link(parsed.target, parsed.alias, parsed.fragment, embed, line))
        pos = match.end()


def _code_span_end(text: str, at: int, end: int) -> int:
    """The end of the code span opening at `at`, if it closes on the same line; else -1
    (it may close on a later line of the paragraph, or never: the parser decides)."""
    run = at
    while run < end and text[run] == "`":
        run += 1
    length, line_end = run - at, text.find("\n", run, end)
    line_end = end if line_end < 0 else line_end
    pos = run
    while (close := text.find("`", pos, line_end)) >= 0:
        pos = close
        while pos < line_end and text[pos] == "`":
            pos += 1
        if pos - close == length:
            return pos
    return -1


def extract_links(markdown: str) -> list[Link]:
    """Every `[[...]]` and `![[...]]` outside code, in document order."""
    if "[[" not in markdown:
        return []
    fast = _fast_links(markdown)
    if fast is not None:
        return fast
    return [
        Link(p.target, p.alias, p.fragment, p.raw.startswith("!"), block.line(p.offset) + 1)
        for block in _blocks(markdown)
        for p in block.links
    ]


def is_valid_target(target: str) -> bool:
    """Whether `target` can stand inside `[[...]]` and mean the same when read back."""
    return bool(target.strip()) and not _FORBIDDEN_IN_TARGET.intersection(target)


def rewrite_links(markdown: str, new_targets: Mapping[int, str]) -> str:
    """Replace the targets of the links numbered as in `extract_links`; nothing else changes."""
    for new in new_targets.values():
        if not is_valid_target(new):
            raise ValueError(f"not a valid link target: {new!r}")
    if not new_targets:
        return markdown
    parts = _NEWLINE.split(markdown)  # line i is parts[2 * i]
    edits: dict[int, list[tuple[int, int, str]]] = {}
    seen: dict[int, str] = {}  # line -> inline text of earlier table cells on that line
    index = 0
    for block in _blocks(markdown):
        for p in block.links:
            if index in new_targets:
                line = block.line(p.offset)
                at = _find_in_line(block, p, parts[2 * line], seen.get(line, ""))
                edit = (at + p.target_span[0], at + p.target_span[1], new_targets[index])
                edits.setdefault(line, []).append(edit)
            index += 1
        if block.in_table:
            seen[block.first] = seen.get(block.first, "") + block.token.content + "\n"
    if any(not 0 <= i < index for i in new_targets):
        raise IndexError(f"link index out of range: the page has {index} links")
    for line, changes in edits.items():
        for start, end, new_target in sorted(changes, reverse=True):
            parts[2 * line] = parts[2 * line][:start] + new_target + parts[2 * line][end:]
    return "".join(parts)


def _find_in_line(block: _Block, p: _Parsed, source_line: str, earlier: str) -> int:
    """Where a link starts in its source line.

    Inline content is not byte-identical to the source (indentation and table cell padding go,
    `\\|` in a table loses its `\\`), but the k-th occurrence of the link's text in what
    markdown-it saw of the line (`earlier` cells, then this content) is the k-th in the line.
    """
    content = block.token.content
    before = earlier + content[content.rfind("\n", 0, p.offset) + 1 : p.offset]
    raw = p.raw.replace("|", "\\|") if block.in_table else p.raw
    text, pos = source_line.replace("\0", "\ufffd"), -len(raw)  # NUL: as markdown-it sees it
    for _ in range(before.count(p.raw) + 1):
        pos = text.find(raw, pos + len(raw))
    if pos < 0:
        raise RuntimeError(f"link {p.raw!r} not found in its source line {source_line!r}")
    return pos


def _mention_pattern(phrase: str) -> re.Pattern[str] | None:
    words = phrase.split()
    if not words:
        return None
    body = r"\s+".join(re.escape(word) for word in words)
    left = f"(?<!{_WORD})" if re.match(_WORD, words[0][0]) else ""
    right = f"(?!{_WORD})" if re.match(_WORD, words[-1][-1]) else ""
    return re.compile(left + body + right, re.IGNORECASE)


def _masked(token: Token) -> str:
    """The token's content with code, HTML, autolinks and wiki links blanked out."""
    text, pieces, done = token.content, [], 0
    for child in _descendants(token.children or []):
        parsed: _Parsed | None = child.meta.get("wikilink")
        span = (parsed.offset, parsed.offset + len(parsed.raw)) if parsed else child.meta.get(_MASK)
        if span:
            pieces += [text[done : span[0]], re.sub(r"[^\n]", " ", text[span[0] : span[1]])]
            done = span[1]
    return "".join([*pieces, text[done:]])


def find_mentions(markdown: str, phrase: str) -> list[tuple[int, str]]:
    """Lines where `phrase` appears as words in prose (not in code or links), in order."""
    pattern = _mention_pattern(phrase)
    if pattern is None or not pattern.search(markdown):
        return []
    found: set[int] = set()
    for block in _blocks(markdown, lambda text: pattern.search(text) is not None):
        found.update(block.line(m.start()) for m in pattern.finditer(_masked(block.token)))
    text_lines = _NEWLINE.split(markdown)[::2]
    return [(n + 1, text_lines[n]) for n in sorted(found)]


def source_lines(markdown: str) -> list[str]:
    """The lines as links count them: split at LF, CRLF and CR only."""
    return _NEWLINE.split(markdown)[::2] if "\r" in markdown else markdown.split("\n")


def line_text(markdown: str, line: int) -> str:
    """The 1-based line's text without its line break; `""` when out of range."""
    lines = _NEWLINE.split(markdown)[::2]
    return lines[line - 1] if 1 <= line <= len(lines) else ""
