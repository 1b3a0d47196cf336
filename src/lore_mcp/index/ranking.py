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
NAME_BONUS = 2.0
PHRASE_BONUS = 1.0
EXACT_NAME_BONUS = 3.0
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
    weighed: float | None = None  # its BM25 sum on its own text (`rescore`), in units
    # of the query's IDF; None until the best candidates are weighed


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
    if candidate.weighed is not None:
        return weighed_score(candidate)
    relevance = max(0.0, candidate.relevance)
    fraction = (
        EXACT_NAME_WEIGHT * candidate.exact_name
        + HELD_WEIGHT * min(1.0, candidate.held)
        + NAMED_WEIGHT * min(1.0, candidate.named)
        + BONUS_WEIGHT * min(1.0, candidate.bonus)
        + RELEVANCE_WEIGHT * min(1.0, relevance)
    ) / _SCALE
    return candidate.holds_all + min(fraction, 0.999999) + 1e-9


def weighed_score(candidate: Candidate) -> float:
    """The score of a candidate weighed on its own text: 1 if it holds every term,
    plus r / (r + 1), r its BM25 sum, `NAME_BONUS` times the share of the query's weight
    its names hold, `PHRASE_BONUS` for each phrase it holds and `EXACT_NAME_BONUS` for
    a name that is the query, all in units of the query's total IDF."""
    rel = (
        max(0.0, candidate.weighed or 0.0)
        + NAME_BONUS * candidate.named
        + PHRASE_BONUS * candidate.bonus
        + EXACT_NAME_BONUS * candidate.exact_name
    )
    return candidate.holds_all + rel / (rel + 1.0) + 1e-9


def ranked(found: Mapping[int, Candidate], terms: int) -> list[tuple[int, float]]:
    """(page id, score) of the candidates, best first (ties by id)."""
    return sorted(((page, score(c, terms)) for page, c in found.items()), key=best_first)


def best_first(item: tuple[int, float]) -> tuple[float, int]:
    return -item[1], item[0]
