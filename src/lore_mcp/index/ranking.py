"""How the few candidates SQLite chose are ordered, and the score each one reports.
Pure functions.

A page's score is 1 if it holds every deciding term of the query (in its names,
headings, text or symbol words), plus a fraction in (0, 1) that orders pages alike. The
fraction blends, heaviest first: a title or alias that is the query itself; for pages
holding only some terms, the share of the query's weight (each term's IDF) they hold
(looked up only when such pages are needed to fill the hits); the share of
the query's weight the page's names hold (title and alias matches rank above
body-only ones); the share of the query's phrases its text holds; and its relevance,
FTS5's bm25() with column weights (names, headings, body, stems), or for a symbol word
how often the page holds it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

EXACT_NAME_WEIGHT = 4.0
HELD_WEIGHT = 3.0
NAMED_WEIGHT = 3.0
BONUS_WEIGHT = 1.0
RELEVANCE_WEIGHT = 1.0
_SCALE = EXACT_NAME_WEIGHT + HELD_WEIGHT + NAMED_WEIGHT + BONUS_WEIGHT + RELEVANCE_WEIGHT
_SATURATION = 1.2  # BM25's k1: how fast more occurrences stop counting


@dataclass(slots=True)
class Candidate:
    """What is known of a candidate page."""

    relevance: float  # in [0, 1]: bm25() as a share of the best one's, or a symbol
    # word's saturated count: higher is better
    holds_all: bool = False  # it holds every deciding term
    named: float = 0.0  # the share of the query's weight its title or aliases hold
    exact_name: bool = False  # a title or alias is the query itself
    bonus: float = 0.0  # the share of the query's phrases its text holds
    symbol: bool = False  # found by a symbol word it holds
    held: float = 1.0  # the share of the query's weight (IDF) it holds, if looked up


def idf(pages: int, holding: int) -> float:
    """How much finding a term in a page tells, from how many of `pages` hold it (in
    Lucene's form, which stays above zero however common the term is)."""
    return math.log(1.0 + (pages - holding + 0.5) / (holding + 0.5))


def saturated(count: int) -> float:
    """The weight in [0, 1) of a term counted `count` times (lengths unknown)."""
    return count / (count + _SATURATION)


def score(candidate: Candidate, terms: int) -> float:
    """The candidate's score (see the module's docstring); `terms` is how many terms
    decide."""
    relevance = max(0.0, candidate.relevance)
    fraction = (
        EXACT_NAME_WEIGHT * candidate.exact_name
        + HELD_WEIGHT * min(1.0, candidate.held)
        + NAMED_WEIGHT * min(1.0, candidate.named)
        + BONUS_WEIGHT * min(1.0, candidate.bonus)
        + RELEVANCE_WEIGHT * min(1.0, relevance)
    ) / _SCALE
    return candidate.holds_all + min(fraction, 0.999999) + 1e-9


def ranked(found: Mapping[int, Candidate], terms: int) -> list[tuple[int, float]]:
    """(page id, score) of the candidates, best first (ties by id)."""
    return sorted(((page, score(c, terms)) for page, c in found.items()), key=best_first)


def best_first(item: tuple[int, float]) -> tuple[float, int]:
    return -item[1], item[0]
