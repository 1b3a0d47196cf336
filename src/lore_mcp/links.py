"""Wiki links in Markdown: find them, rewrite their targets, find unlinked mentions.

Pure functions, no I/O. Links are found by an inline rule added to markdown-it, so a
`[[...]]` in code (inline, fenced or indented) or escaped as `\\[[` is never a link.
Every inline token carries `map[0]`, the source line it starts on; the rule records each
link's offset in the token's content, so its line is `map[0]` plus the newlines before it.
Rewriting finds each link in its source line by counting occurrences of its text.
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline, autolink, backtick, html_inline, image
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
    # markdown-it parses image alt text as a separate source: remember where it starts.
    outer = _base(state)
    state.env[_BASE] = outer + state.pos + 2
    try:
        return image(state, silent)
    finally:
        state.env[_BASE] = outer


def _opaque_rule(state: StateInline, silent: bool) -> bool:
    """Code spans, autolinks and inline HTML, marked so that mentions skip them."""
    char, start, count = state.src[state.pos], state.pos, len(state.tokens)
    if char == "`":
        found = backtick(state, silent)
    else:
        found = char == "<" and (autolink(state, silent) or html_inline(state, silent))
    if found and not silent and len(state.tokens) > count:
        state.tokens[-1].meta[_MASK] = (_base(state) + start, _base(state) + state.pos)
    return found


class _Parser(MarkdownIt):
    """Only tokens are needed, never HTML, so link URLs are taken as written."""

    def normalizeLink(self, url: str) -> str:
        return url

    def validateLink(self, url: str) -> bool:
        return True


def _inline_rule(state: StateCore) -> None:
    # Parses only the inline tokens that can hold what the caller is looking for.
    wanted: Callable[[str], bool] = state.env[_WANTED]
    for token in state.tokens:
        if token.type == "inline" and wanted(token.content):
            token.children = []
            state.md.inline.parse(token.content, state.md, state.env, token.children)


def _build() -> MarkdownIt:
    md = _Parser("commonmark").enable("table")
    md.disable(["lheading", "reference"])
    # Emphasis and entities never hide or form links: skip their work.
    md.disable(["emphasis", "entity", "balance_pairs", "fragments_join", "text_join"])
    md.disable(["autolink", "html_inline"])  # done by `_opaque_rule`
    md.core.ruler.at("inline", _inline_rule)
    md.inline.ruler.before("link", "wikilink", _wikilink_rule)
    md.inline.ruler.at("image", _image_rule)
    md.inline.ruler.at("backticks", _opaque_rule)
    md.parse("[[x]]", {_WANTED: _has_link})  # builds the rule caches before any thread shares md
    return md


def _has_link(text: str) -> bool:
    return "[[" in text


_MD = _build()  # set up once, never changed afterwards: safe to share between threads


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
    tokens = _MD.parse(markdown, {_WANTED: wanted})
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


# What can make text that looks like `[[x]]` something other than a link: code (backticks,
# `~~~` fences, four spaces or a tab, which indent code also after a list marker or `>`),
# HTML and autolinks, escapes, link destinations, tables. (Reference definitions are not
# parsed at all.)
_NOT_PLAIN = re.compile(r"[`<\\\t]|~~~|\]\(| {4}|\|[ ]*:?-|-:?[ ]*\|")


def _plain_links(markdown: str) -> list[Link]:
    """The links of a page with none of the constructs above. markdown-it would find
    every `[[...]]` run there, so a scan gives the same list without parsing."""
    text = _NEWLINE.sub("\n", markdown.replace("\0", "\ufffd"))  # as markdown-it sees it
    found: list[Link] = []
    line, counted = 1, 0
    for match in _LINK.finditer(text):
        parsed = _parse(match.group(), match.start())
        if parsed is not None:
            line += text.count("\n", counted, match.start())
            counted = match.start()
            embed = parsed.raw.startswith("!")
            found.append(Link(parsed.target, parsed.alias, parsed.fragment, embed, line))
    return found


def extract_links(markdown: str) -> list[Link]:
    """Every `[[...]]` and `![[...]]` outside code, in document order."""
    if "[[" not in markdown:
        return []
    if _NOT_PLAIN.search(markdown) is None:
        return _plain_links(markdown)
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
