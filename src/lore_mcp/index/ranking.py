"""How hits are ordered, and the score each one reports. Pure functions.

A page's score is 1 if it holds every deciding term of the query (in its names,
headings, text or symbol words), plus a fraction in (0, 1) that orders pages alike:
its relevance, a BM25 sum over the terms it holds. Each term weighs its inverse
document frequency, in Lucene's form, which stays above zero however common the term
is (FTS5's own floors it to almost nothing past half the pages, which made every hit of
a common word score 0). Within a term: how often the page holds it, saturated and
against the page's length, as FTS5's bm25() computes it with headings weighing more
than body text, or a plain `PRESENT` where only the term's presence is known (common
terms in large vaults, whose frequency would cost a pass over every page holding them;
phrases). A term in the page's title or aliases adds `NAME_WEIGHT`; each of the query's
phrases the page holds adds `BONUS_WEIGHT`, and a title or alias that is the query
itself `EXACT_NAME_WEIGHT`, in units of the query's total IDF.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

NAME_WEIGHT = 2.0
BONUS_WEIGHT = 1.0
EXACT_NAME_WEIGHT = 3.0
FTS5_IDF_FLOOR = 1e-6
PRESENT = 1.0  # the within-term weight of a term known only to be in the page
_SATURATION = 1.2  # BM25's k1: how fast more occurrences stop counting


def idf(pages: int, holding: int) -> float:
    """How much finding a term in a page tells, from how many of `pages` hold it."""
    return math.log(1.0 + (pages - holding + 0.5) / (holding + 0.5))


def fts5_idf(pages: int, holding: int) -> float:
    """The IDF FTS5's bm25() multiplies by (floored for terms in most pages)."""
    return max(FTS5_IDF_FLOOR, math.log((pages - holding + 0.5) / (holding + 0.5)))


def saturated(count: int) -> float:
    """The within-term weight of a term counted `count` times (lengths unknown)."""
    return count * (_SATURATION + 1.0) / (count + _SATURATION)


@dataclass(slots=True)
class Evidence:
    """What is known of the candidate pages, term by term (by term key)."""

    weight: dict[str, dict[int, float]] = field(default_factory=dict)  # in the text
    named: dict[str, set[int]] = field(default_factory=dict)  # in the title or aliases
    bonus: Counter[int] = field(default_factory=Counter)  # bonus phrases held
    exact_name: set[int] = field(default_factory=set)  # a title or alias is the query
    pages: set[int] = field(default_factory=set)  # every candidate

    def note(self, key: str, page: int, weight: float) -> None:
        self.note_all(key, ((page, weight),))

    def note_all(self, key: str, weighed: Iterable[tuple[int, float]]) -> None:
        """Pages holding a term, each with its within-term weight (the greater one kept)."""
        found = self.weight.setdefault(key, {})
        get = found.get
        for page, weight in weighed:
            if weight > get(page, 0.0):
                found[page] = weight
        self.pages.update(found)

    def name(self, key: str, page: int) -> None:
        self.named.setdefault(key, set()).add(page)
        self.pages.add(page)

    def holds(self, key: str, page: int) -> bool:
        return page in self.weight.get(key, ()) or page in self.named.get(key, ())

    def forget(self, key: str, page: int) -> None:
        self.weight.get(key, {}).pop(page, None)
        self.named.get(key, set()).discard(page)


def scores(
    evidence: Evidence, weights: Mapping[str, float], pages: Collection[int] | None = None
) -> dict[int, float]:
    """The score of each candidate (or of `pages`) holding a deciding term; `weights`
    holds each deciding term's IDF by key."""
    relevance: dict[int, float] = {}
    held: dict[int, int] = {}
    for key, idf_ in weights.items():
        within = evidence.weight.get(key, {})
        named = evidence.named.get(key, set())
        for page, weight in within.items():
            held[page] = held.get(page, 0) + 1
            relevance[page] = relevance.get(page, 0.0) + idf_ * weight
        for page in named:
            if page not in within:
                held[page] = held.get(page, 0) + 1
            relevance[page] = relevance.get(page, 0.0) + idf_ * NAME_WEIGHT
    total = sum(weights.values())
    every = len(weights)
    bonus, exact = evidence.bonus, evidence.exact_name
    found = {}
    for page in held if pages is None else [p for p in pages if p in held]:
        extra = BONUS_WEIGHT * bonus[page] + EXACT_NAME_WEIGHT * (page in exact)
        rel = relevance[page] + total * extra
        found[page] = (held[page] == every) + rel / (rel + total)
    return found


def ranked(evidence: Evidence, weights: Mapping[str, float]) -> list[tuple[int, float]]:
    """(page id, score) of the candidates holding a deciding term, best first (ties by id)."""
    return sorted(scores(evidence, weights).items(), key=best_first)


def best_first(item: tuple[int, float]) -> tuple[float, int]:
    return -item[1], item[0]
