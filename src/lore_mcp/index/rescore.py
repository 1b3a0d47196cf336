"""The best few candidates weighed on their own text. Pure functions.

FTS5's bm25() gives a term held by most pages an IDF of almost nothing, so among pages
that all hold a query's common words it cannot tell the page that is about them from
one that mentions them once. The few dozen candidates SQLite chose are weighed again
here, from their folded text: a BM25 sum over the query's terms, each its IDF in
Lucene's form (which stays above zero however common the term is) times how often the
page holds it (saturated, against the page's length, a heading counting `HEADING`
times), and which of the query's phrases each holds. Each term is found as what the
tokenizer would match, about: each of its words as the start of a word (in any English
inflection, or as its German, French or Spanish stem), a phrase's words in a row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from lore_mcp.index import terms
from lore_mcp.index.stems import bases

HEADING = 3  # a word in a heading counts this many times
PRESENT = 1.0  # the weight of a phrase a page holds, however often
MOST = 12  # occurrences of a word counted in a page (more add almost nothing)
_SATURATION = 1.2  # BM25's k1
_LENGTH = 0.75  # BM25's b: how much a long page's words count for less


@dataclass(frozen=True, slots=True)
class Weighed:
    """A term to weigh: its key, its IDF, and how to find it in folded text: for a
    word, the starts it may have (its inflections' and stems'), counted; for a phrase,
    a pattern, and only whether a page holds it counts (`PRESENT`)."""

    key: str
    idf: float
    starts: tuple[str, ...] = ()
    phrase: re.Pattern[str] | None = None

    def count(self, text: str) -> int:
        if self.phrase is not None:
            return 1 if holds(text, self.phrase) else 0
        if len(self.starts) == 1:
            return count_starts(text, self.starts[0])
        return max((count_starts(text, start) for start in self.starts), default=0)


def count_starts(text: str, start: str, most: int = MOST) -> int:
    """How often a word of a folded text starts with `start` (a piece of Chinese or
    Japanese: how often the text holds it), up to `most`. Searched for as a string,
    which is many times faster than a regular expression over the text."""
    cjk = terms.is_cjk(start[:1])
    found = 0
    at = text.find(start)
    while at >= 0 and found < most:
        if cjk or at == 0 or not text[at - 1].isalnum():
            found += 1
        at = text.find(start, at + len(start))
    return found


def holds(text: str, phrase: re.Pattern[str]) -> bool:
    """Whether a folded text holds a phrase (`pattern`) at the start of a word."""
    return any(m.start() == 0 or not text[m.start() - 1].isalnum() for m in phrase.finditer(text))


def word_start(word: str, forms: Iterable[str]) -> str:
    """What every inflection of a word starts with, about: its shortest form without
    a final e or y (query: quer, queries)."""
    start = min((word, *forms, *bases(word)), key=len)
    return start[:-1] if len(start) > 3 and start[-1] in "ey" else start


def pattern(words: Sequence[Sequence[str]]) -> re.Pattern[str]:
    """A pattern for a term: each entry of `words` a way to write it (the starts of
    its words, in a row); Chinese or Japanese pieces as they are. It starts with
    plain text, which `re` finds fast: whether a match starts a word is for `holds`."""
    options = []
    for starts in words:
        if len(starts) == 1 and terms.is_cjk(starts[0][:1]):
            options.append(re.escape(starts[0]))
        else:
            options.append(r"[\W_]+".join(re.escape(s) + r"\w*" for s in starts))
    return re.compile("|".join(options))


def relevance(
    texts: Mapping[int, tuple[str, str]],
    weighed: Sequence[Weighed],
    held: Mapping[int, set[str]],
    whole: float,
) -> dict[int, float]:
    """Each page's BM25 sum over the terms, in units of the terms' total IDF (each
    term's weight within a page is below `_SATURATION` + 1). `texts` holds each page's
    folded headings and body; `held` the keys of the terms the index says a page holds
    (counted once when the pattern misses them); `whole` the query's total IDF."""
    if not texts or whole <= 0:
        return dict.fromkeys(texts, 0.0)
    average = sum(len(body) for _, body in texts.values()) / len(texts) or 1.0
    sums: dict[int, float] = {}
    for page, (heads, body) in texts.items():
        norm = _SATURATION * (1.0 - _LENGTH + _LENGTH * len(body) / average)
        total = 0.0
        for term in weighed:
            count = term.count(body)
            if heads and count:
                count += (HEADING - 1) * term.count(heads)
            if not count and term.key in held.get(page, ()):
                count = 1
            if count and term.phrase is not None:
                total += term.idf * PRESENT
            elif count:
                total += term.idf * count * (_SATURATION + 1.0) / (count + norm)
        sums[page] = total / whole
    return sums


def saturated(count: int) -> float:
    """The weight of a term a page holds `count` times, its length unknown."""
    return count * (_SATURATION + 1.0) / (count + _SATURATION)


def phrases_held(body: str, patterns: Sequence[re.Pattern[str]]) -> int:
    """How many of the phrases' patterns a folded text holds."""
    return sum(1 for p in patterns if holds(body, p))
