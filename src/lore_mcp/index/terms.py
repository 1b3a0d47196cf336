"""Text as search reads it: a page's text as the FTS table stores it, the symbol words
and headings a page holds, and a user's query as the terms it looks for. Pure
functions, no I/O.

The FTS tokenizer (`porter unicode61 remove_diacritics 2`) folds case and diacritics and
stems English words, on the pages and on the queries alike: "embedding" finds "embed".
Chinese and Japanese have no spaces between words, so each of their characters is
stored as its own token (separated by U+001F, which the tokenizer treats as a separator
and which never occurs in text), and a piece of a query in them becomes a phrase of its
characters: "記憶" matches inside "長期記憶の話". The tokenizer splits "C++", "node.js" or
"v1.10" into letters and numbers, so such symbol words are kept apart, as written
(lowercased), and a query finds them in a table of their own.

A query becomes terms: each "quoted phrase" (exact: its words as written, in order),
each symbol word, each other word, and for a run of Chinese or Japanese the pieces left
between its question words and particles (a piece of one or two characters is a term; a
longer one gives its two-character parts, and counts in full as a bonus). Stopwords are
terms marked `stop`: they do not decide which pages match.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from functools import cache

from lore_mcp.index.stopwords import CJK_LONGEST_FIRST, LATIN

_CJK = (
    "\u2e80-\u2fdf\u3005\u3040-\u30ff\u3100-\u312f\u3190-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
)
_CJK_RUN = re.compile(f"[{_CJK}]+")
_CJK_FIRST = _CJK[0]  # no char before it is one
SEP = "\x1f"
_QUOTED = re.compile(r'"([^"]*)"')
_WORD = re.compile(f"[{_CJK}]+|[^\\W_{_CJK}]+")
# Words joined by hyphens (read-only, end-to-end): a term as a phrase, besides its words.
_COMPOUND = re.compile(f"[^\\W_{_CJK}]+(?:-[^\\W_{_CJK}]+)+")
_TOKEN = re.compile(f"[{_CJK}]|[^\\W_{_CJK}]+")
# A symbol word: dotted (node.js, v1.10), a leading dot (.NET), or ending in + or # (C++, C#).
SYMBOL = re.compile(r"(?<![\w.+#])(?:[^\W_]\w*(?:\.\w+)+|\.[^\W\d_]\w*|[^\W_]\w*[+#]+)(?![\w+#])")
# Where one may be: a dot between word characters, + or # after one, a dot before a
# letter at a word's start. Each pattern starts with its character, which the regex
# engine looks for as fast as `str.find` (one class of the three is 4x slower).
_SYMBOL_HINTS = (
    re.compile(r"\.(?:(?<=\w\.)(?=\w)|(?<![\w.]\.)(?=[^\W\d_]))"),
    re.compile(r"\+(?<=\w\+)"),
    re.compile(r"#(?<=\w#)"),
)
_SYMBOL_CHARS = frozenset(".+#_")
# An ATX heading line, after its line break (searched for in "\n" + text: a pattern that
# starts with a plain character is found far faster than one that starts with `^`).
_HEADING = re.compile(r"\n {0,3}#{1,6}[ \t]+([^\n]*)")
_DIACRITIC = re.compile("[\u0300-\u036f]+")


def fts_text(text: str) -> str:
    """Text as stored in the FTS table: CJK characters split into single tokens."""
    if text.isascii():
        return text
    return _CJK_RUN.sub(lambda m: SEP + SEP.join(m.group()) + SEP, text)


def is_cjk(char: str) -> bool:
    """Whether a character is Chinese or Japanese (or Korean), stored as a token of its own."""
    return char >= _CJK_FIRST and _CJK_RUN.match(char) is not None


def fold(text: str) -> str:
    """Lowercase without diacritics ("Étiquettes" → "etiquettes"), as the tokenizer
    compares words. Only the combining marks of Latin, Greek and Cyrillic letters go:
    Japanese kana keep theirs (が stays が)."""
    text = text.lower()
    if text.isascii():
        return text
    marked, bare = _marked()
    if marked.search(text) is None and unicodedata.is_normalized("NFC", text):
        return text  # no mark to take off (Cyrillic, Greek without accents, CJK): as it is
    # Each char that holds a mark, as it is without (its canonical decomposition with the
    # marks taken off, composed again); the marks themselves go. That is the whole
    # text's decomposition without the marks, put back in canonical order; composed
    # again, it is the text folded whenever it is composed already. Else (rarely: a mark
    # left that now composes with what came before it) it is composed the long way.
    folded = marked.sub(lambda match: bare[match.group()], text)
    if unicodedata.is_normalized("NFC", folded):
        return folded
    return unicodedata.normalize("NFC", _DIACRITIC.sub("", unicodedata.normalize("NFD", text)))


@cache
def _marked() -> tuple[re.Pattern[str], dict[str, str]]:
    """The chars that hold a mark `fold` takes off: the marks, and every char whose
    canonical decomposition has one; and each of them without its marks (made on first
    use, in about 20 ms: it looks at every code point up to the last that has a
    decomposition, U+2FA1D)."""
    bare = {chr(code): "" for code in range(0x300, 0x370)}
    for code in range(0x80, 0x2FA1E):
        if unicodedata.decomposition(char := chr(code)) and _DIACRITIC.search(
            decomposed := unicodedata.normalize("NFD", char)
        ):
            bare[char] = unicodedata.normalize("NFC", _DIACRITIC.sub("", decomposed))
    return re.compile("[" + "".join(map(re.escape, bare)) + "]"), bare


def symbol_words(text: str) -> Counter[str]:
    """The symbol words of a text (lowercased), with how often each occurs."""
    found: Counter[str] = Counter()
    done = 0
    for at in sorted(hint.start() for pattern in _SYMBOL_HINTS for hint in pattern.finditer(text)):
        if at < done:
            continue
        start = at
        while start > 0 and (text[start - 1].isalnum() or text[start - 1] in _SYMBOL_CHARS):
            start -= 1
        end = at + 1
        while end < len(text) and (text[end].isalnum() or text[end] in _SYMBOL_CHARS):
            end += 1
        done = end
        found.update(m.group().lower() for m in SYMBOL.finditer(text[start:end]))
    return found


def headings(text: str) -> str:
    """The text of a page's headings (ATX `#` lines), one a line."""
    if "#" not in text:
        return ""
    return "\n".join(m.group(1).rstrip(" \t#") for m in _HEADING.finditer("\n" + text))


def quote(text: str) -> str:
    """A string as an FTS5 string: its operators and quotes are plain text."""
    return '"' + text.replace('"', '""') + '"'


@dataclass(frozen=True, slots=True)
class Term:
    """One thing a query looks for: an FTS5 string, or a symbol word."""

    key: str  # tells terms apart: a word, a symbol or a phrase asked for twice is one term
    fts: str | None  # the FTS5 MATCH string; None for a symbol
    symbol: str | None = None
    stop: bool = False
    exact: re.Pattern[str] | None = None  # a quoted phrase: found in the folded page text
    words: tuple[str, ...] = ()  # folded words, for marking snippets of long pages


@dataclass(frozen=True, slots=True)
class Query:
    terms: tuple[Term, ...]
    bonus: tuple[tuple[str, ...], ...]  # phrases a page ranks higher for holding: folded
    # words, or one piece of Chinese or Japanese
    prefix: Term | None  # the last word as the start of longer words, if it may be one
    folded: str  # the words of the query that are not stopwords, folded, space-separated


def parse(text: str) -> Query:
    """The terms of a user's query; any string is safe."""
    reader = _Reader()
    text = text.replace("\x00", " ")
    last = 0
    for quoted in _QUOTED.finditer(text):
        reader.bare(text[last : quoted.start()])
        reader.phrase(quoted.group(1))
        last = quoted.end()
    ending = text[last:].replace('"', " ")
    reader.bare(ending)
    reader.close_span()
    bonus = tuple(dict.fromkeys(reader.bonus))
    return Query(tuple(reader.terms.values()), bonus, _prefix(ending), " ".join(reader.plain))


def _prefix(ending: str) -> Term | None:
    """The last word as the start of longer words: a plain word of three letters or
    more that is no stopword, with nothing after it (the query is being typed)."""
    words = _WORD.findall(ending)
    if not words or ending[-1].isspace() or SYMBOL.search(ending.rsplit(maxsplit=1)[-1]):
        return None
    word = words[-1]
    if len(word) < 3 or _CJK_RUN.match(word) or fold(word) in LATIN:
        return None
    return Term(f"p:{fold(word)}", quote(word) + "*", words=(fold(word),))


class _Reader:
    """Reads a query piece by piece into its terms."""

    def __init__(self) -> None:
        self.terms: dict[str, Term] = {}
        self.bonus: list[tuple[str, ...]] = []
        self.plain: list[str] = []  # what is not a stopword, folded, in order
        self.span: list[tuple[str, bool]] = []  # bare words in a row: (word, is a stopword)

    def add(self, term: Term) -> None:
        self.terms.setdefault(term.key, term)

    def close_span(self) -> None:
        """The phrase from the first word of the row that is not a stopword to the last,
        as a bonus, when it holds two such words or more."""
        keep = [i for i, (_, stop) in enumerate(self.span) if not stop]
        if len(keep) >= 2:
            words = self.span[keep[0] : keep[-1] + 1]
            self.bonus.append(tuple(fold(word) for word, _ in words))
        self.span = []

    def bare(self, text: str) -> None:
        """Unquoted text: symbol words, CJK runs and other words."""
        for chunk in text.split():
            for symbol in SYMBOL.finditer(chunk):
                word = symbol.group().lower()
                self.add(Term(f"s:{word}", None, symbol=word, words=(word,)))
                self.plain.append(word)
                self.close_span()
            rest = SYMBOL.sub(" ", chunk)
            for compound in _COMPOUND.finditer(rest):
                parts = _WORD.findall(compound.group())
                key = f"h:{' '.join(fold(p) for p in parts)}"
                self.add(Term(key, quote(" ".join(parts)), words=tuple(map(fold, parts))))
            for match in _WORD.finditer(rest):
                word = match.group()
                if _CJK_RUN.match(word):
                    self.close_span()
                    self.cjk(word)
                    continue
                key = fold(word)
                stop = key in LATIN
                self.add(Term(f"w:{key}", quote(word), stop=stop, words=(key,)))
                self.span.append((word, stop))
                if not stop:
                    self.plain.append(key)

    def phrase(self, text: str) -> None:
        """A quoted phrase: one term, whose words must stand in the page as written."""
        self.close_span()
        tokens = _TOKEN.findall(fold(text))
        if not tokens:
            return
        pattern = "" if _CJK_RUN.match(tokens[0]) else r"(?<![^\W_])"
        for before, token in zip([None, *tokens], tokens, strict=False):
            if before is not None:
                joined = _CJK_RUN.match(before) or _CJK_RUN.match(token)
                pattern += r"[\W_]*" if joined else r"[\W_]+"
            pattern += re.escape(token)
        pattern += "" if _CJK_RUN.match(tokens[-1]) else r"(?![^\W_])"
        words = tuple(t for t in tokens if not _CJK_RUN.match(t)) or ("".join(tokens),)
        phrase = quote(fts_text(" ".join(tokens)))
        key = f"q:{' '.join(tokens)}"
        self.add(Term(key, phrase, exact=re.compile(pattern), words=words))
        self.plain.append(" ".join(tokens))

    def cjk(self, run: str) -> None:
        """A run of Chinese or Japanese: the pieces between its stopwords."""
        pieces = _cjk_pieces(run)
        if not pieces:  # nothing but stopwords: look for the run itself
            self.add(Term(f"c:{run}", quote(fts_text(run)), stop=True, words=(run,)))
            return
        for piece in pieces:
            self.plain.append(piece)
            if len(piece) <= 2:
                self.add(Term(f"c:{piece}", quote(fts_text(piece)), words=(piece,)))
                continue
            for part in (piece[i : i + 2] for i in range(len(piece) - 1)):
                self.add(Term(f"c:{part}", quote(fts_text(part)), words=(part,)))
            self.bonus.append((piece,))


def _cjk_pieces(run: str) -> list[str]:
    pieces: list[str] = []
    current = ""
    at = 0
    while at < len(run):
        stop = next((s for s in CJK_LONGEST_FIRST if run.startswith(s, at)), None)
        if stop is None:
            current += run[at]
            at += 1
            continue
        if current:
            pieces.append(current)
        current = ""
        at += len(stop)
    if current:
        pieces.append(current)
    return pieces
