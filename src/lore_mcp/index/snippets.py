"""A hit's snippet: the passage of its text with the most query words, the words
marked `**like this**`. Pure functions.

The text comes with its matches between `OPEN` and `CLOSE` (FTS5's highlight(), or
`mark` for pages too long for it). The page's own emphasis (`**`, `*`, `__`, `_`, `~~`,
`==` around words) is taken out of the passage first, so that the marks never run into
it (`****Encryption**`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from lore_mcp.index.terms import SEP, fold, is_cjk

OPEN, CLOSE = "\x02", "\x03"
WORDS = 24  # a snippet's length, in words
_LEAD = 4  # words shown before the passage's first match
REACH = 600  # characters of text a snippet is chosen from past the words found
# Emphasis delimiters: a run that opens (no word character before it, text after it) or
# closes (text before it, no word character after it) a span; a mark counts as a word
# character, so `delete_page` keeps its `_` when `page` is marked.
_EMPHASIS = re.compile(
    f"(?<![^\\W_]|[{OPEN}{CLOSE}])(?:\\*+|_+|~~|==)(?=\\S)"
    f"|(?<=\\S)(?:\\*+|_+|~~|==)(?![^\\W_]|[{OPEN}{CLOSE}])"
)
_DELIMITER = re.compile(r"[*_~=]")  # what every emphasis run starts with, found fast
_JOINED_MARKS = re.compile(f"{CLOSE}\\s+{OPEN}")  # marked words in a row: marked together
_PLAIN = f"[^{OPEN}{CLOSE}]*"
_WELL_FORMED = re.compile(f"{_PLAIN}(?:{OPEN}{_PLAIN}{CLOSE}{_PLAIN})*")


def passage(marked: str, words: int = WORDS) -> str:
    """The window of `words` words holding the most distinct marked words (then the
    most marks, then the earliest), with the marks as `**`."""
    text = marked.replace(SEP, "") if SEP in marked else marked
    text = text.replace(OPEN + CLOSE, "").replace(CLOSE + OPEN, "")
    tokens = text.split()
    if not tokens:
        return ""
    marks = [i for i, token in enumerate(tokens) if OPEN in token]
    start = _best_start(tokens, marks, words)
    end = min(len(tokens), start + words)
    shown = " ".join(tokens[start:end])
    shown = _JOINED_MARKS.sub(lambda m: m.group()[1:-1], _balanced(shown))
    if _DELIMITER.search(shown):  # `_EMPHASIS` tries every position: rarely needed
        shown = _EMPHASIS.sub("", shown)
    shown = shown.strip().replace(OPEN, "**").replace(CLOSE, "**")
    return ("…" if start > 0 else "") + shown + ("…" if end < len(tokens) else "")


def _best_start(tokens: list[str], marks: list[int], words: int) -> int:
    """Where the best window starts: a few words before its first mark."""
    if not marks:
        return 0
    names = [_marked_word(tokens[m]) for m in marks]
    counts: Counter[str] = Counter()
    best, start, end = (0, 0), marks[0], 0
    for first, at in enumerate(marks):
        while end < len(marks) and marks[end] < at + words - _LEAD:
            counts[names[end]] += 1
            end += 1
        if (len(counts), end - first) > best:
            best, start = (len(counts), end - first), at
        counts[names[first]] -= 1
        if not counts[names[first]]:
            del counts[names[first]]
    return max(0, start - _LEAD)


def _marked_word(token: str) -> str:
    return fold(token.partition(OPEN)[2].partition(CLOSE)[0])


def _balanced(text: str) -> str:
    """Marks cut by the window's edges closed or dropped (and marks within marks)."""
    if _WELL_FORMED.fullmatch(text):  # the usual case, checked in one pass
        return text
    opened = False
    out: list[str] = []
    for char in text:
        if char == OPEN:
            if opened:
                continue
            opened = True
        elif char == CLOSE:
            if not opened:
                continue
            opened = False
        out.append(char)
    if opened:
        out.append(CLOSE)
    return "".join(out)


def mark(text: str, words: Iterable[str], folded: str | None = None) -> str:
    """`text` with every word that starts with one of `words` (folded) between the
    marks (in Chinese and Japanese, just the characters): an approximation of the
    tokenizer's matching. `folded` is the text folded, if the caller has it."""
    pattern = _starts_pattern(tuple(words))
    if pattern is None:
        return text
    folded = fold(text) if folded is None else folded
    if len(folded) != len(text):  # folding changed the length: mark what lines up
        folded = text.lower()
    out: list[str] = []
    last = 0
    for found in pattern.finditer(folded):
        begin = found.start()
        if begin < last or (begin and folded[begin - 1].isalnum() and found.group().isascii()):
            continue
        end = found.end()
        while end < len(text) and text[end].isalnum() and not is_cjk(text[end - 1]):
            end += 1
        out += [text[last:begin], OPEN, text[begin:end], CLOSE]
        last = end
    out.append(text[last:])
    return "".join(out)


@lru_cache(maxsize=64)
def _starts_pattern(words: tuple[str, ...]) -> re.Pattern[str] | None:
    """A pattern for any of `words`, the longest first; None for no word (the hits of
    one search are marked with the same words)."""
    starts = sorted({w for w in words if w}, key=len, reverse=True)
    return re.compile("|".join(re.escape(w) for w in starts)) if starts else None


def reach(folded: str, words: Sequence[str]) -> int:
    """Where a snippet's text ends: `REACH` characters past where the last of
    these words is first found (the whole text when none is found), where the
    passage holding the most of them nearly always is, at a cost that does not grow
    with the page."""
    firsts = [at for at in (folded.find(w) for w in words) if at >= 0]
    return max(firsts) + REACH if firsts else len(folded)


def mark_symbol(text: str, symbol: str) -> str:
    """A symbol word (`C++`, `.NET`) marked where it stands as a word of its own."""
    pattern = re.compile(r"(?<![\w.+#])" + re.escape(symbol) + r"(?![\w+#])", re.IGNORECASE)
    return pattern.sub(lambda m: OPEN + m.group() + CLOSE, text)
