"""One search, from a query to ranked hits with snippets, at a cost bounded by the hits
it returns rather than by how many pages match.

1. The query's terms (`terms.parse`), each word looked for in its inflections (`stems`)
   that the vault holds. A page matches when it holds any term that is not a stopword
   (stopwords decide only when the query has nothing else); the last word also matches
   as the start of longer words when few pages hold it as a word.
2. How many pages hold each term: counted up to `Limits.exact_count`, estimated beyond
   from how far into the index (pages in id order) the count reached.
3. Candidates: every page holding the rarest terms, together at most
   `Limits.rare_pages`, scored in full by FTS5's bm25(); the pages whose names hold a
   term; and when these are not enough (every word is common), the first
   `Limits.window` pages holding all the common terms, or else any. The common terms
   are then looked for in these pages only.
4. `ranking` orders them. The query's phrases are looked for in the text of the best
   few (FTS5 would pass over every page holding a phrase's words to find one that is
   rare), a quoted phrase is checked against the text of the pages about to be shown,
   and each hit gets its best passage (`snippets`).
"""

from __future__ import annotations

import bisect
import heapq
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from lore_mcp.index import ranking, snippets, terms
from lore_mcp.index.ranking import PRESENT, Evidence
from lore_mcp.index.search import HIGHLIGHT_MAX_BYTES, SearchRow, SearchTable
from lore_mcp.index.stems import Stemmer


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of the index one search may look at. The defaults keep a search within
    a few milliseconds at any vault size; tests give smaller ones to take the paths of
    a large vault in a small one."""

    exact_count: int = 2000  # pages per term counted one by one
    rare_pages: int = 3000  # pages scored in full, all the rarest terms together
    window: int = 200  # pages taken in index order when every term is common
    names: int = 100  # pages per term found by name
    loose: int = 8  # pages found by name alone, each looked up for the common terms


MAX_FORMS = 4  # inflections of a word looked for
COMPLETION_PAGES = 10  # pages whose words tell what the last word may be the start of
COMPLETIONS = 8  # words the last word may be the start of
BONUS_PAGES = 3  # times the hits wanted: the best candidates looked at for phrases
_STABLE_IDF = 0.1  # below this, FTS5's IDF is too near its floor to divide by
_FLOORED = 1e-4  # bm25() scores below this come from the floored IDF


@dataclass(slots=True)
class _Resolved:
    """A query term as the index holds it."""

    term: terms.Term
    forms: list[str]  # FTS5 strings of one phrase each; none for a symbol word
    pages: int  # pages whose text holds it (estimated past `Limits.exact_count`)
    exact: bool
    named: dict[int, str] = field(default_factory=dict)  # pages whose names hold it: names
    ids: list[int] = field(default_factory=list)  # the pages counted, all of them if exact

    @property
    def key(self) -> str:
        return self.term.key

    @property
    def match(self) -> str | None:
        if not self.forms:
            return None
        return self.forms[0] if len(self.forms) == 1 else "(" + " OR ".join(self.forms) + ")"


def search(
    table: SearchTable,
    stemmer: Stemmer,
    text: str,
    limit: int,
    pages: int,
    *,
    limits: Limits | None = None,
) -> list[SearchRow]:
    """The best `limit` pages for a query, best first. `pages` is how many pages the
    vault holds. Any string is safe."""
    query = terms.parse(text)
    found = _Finder(table, stemmer, pages, limits or Limits())
    wanted = [t for t in query.terms if not t.stop]
    deciding = (
        found.resolve(wanted, query.prefix, limit)
        if wanted
        else found.resolve(list(query.terms), None, limit)
    )
    if not deciding:
        return []
    found.total = max(pages, *(r.pages for r in deciding))
    weights = {r.key: ranking.idf(found.total, r.pages) for r in deciding}
    found.gather(deciding, query, limit)
    order = ranking.ranked(found.evidence, weights)
    if query.bonus:
        top, rest = order[: BONUS_PAGES * limit], order[BONUS_PAGES * limit :]
        found.phrases(top, query.bonus)
        rescored = ranking.scores(found.evidence, weights, [page for page, _ in top])
        top = sorted(rescored.items(), key=ranking.best_first)
        order = list(heapq.merge(top, rest, key=ranking.best_first))
    best = found.verified(order, deciding, weights, limit)
    return found.rows(best, deciding)


class _Finder:
    def __init__(self, table: SearchTable, stemmer: Stemmer, pages: int, limits: Limits) -> None:
        self.table = table
        self.limits = limits
        self.stemmer = stemmer
        self.total = pages
        self.evidence = Evidence()
        self.driver: list[str] = []  # matches of the rare terms scored in full
        self.window: list[int] = []
        self.window_holds_all = False
        self.loose: list[int] = []  # candidates checked one by one

    # -- terms ------------------------------------------------------------------------

    def resolve(
        self, wanted: list[terms.Term], prefix: terms.Term | None, limit: int
    ) -> list[_Resolved]:
        """The terms the vault holds. The last word also stands for the longer words it
        starts when fewer than `limit` pages hold it as a word (it is being typed)."""
        kept = [r for r in map(self._resolve, wanted) if r.pages or r.named]
        key = None if prefix is None else f"w:{prefix.words[0]}"
        term = next((t for t in wanted if t.key == key), None)
        if prefix is None or term is None:
            return kept
        if any(r.key == key and r.pages >= limit for r in kept):
            return kept
        extended = self._resolve(term, self._completions(prefix))
        kept = [r for r in kept if r.key != key]
        return [*kept, extended] if extended.pages or extended.named else kept

    def _completions(self, prefix: terms.Term) -> list[str]:
        """The words a prefix starts in the vault, as FTS5 strings: all of them when few
        pages hold any, else those of the first pages (a prefix merges the lists of
        every word it starts, on every use, at a cost that grows with their pages)."""
        assert prefix.fts is not None
        words = self.table.completions(prefix.fts, COMPLETION_PAGES)
        return [terms.quote(w) for w in words if w != prefix.words[0]][:COMPLETIONS]

    def _resolve(self, term: terms.Term, completions: Sequence[str] = ()) -> _Resolved:
        table = self.table
        if term.symbol is not None:
            count = table.symbol_count(term.symbol, self.limits.exact_count)
            named = [
                p
                for p, _, in_names in table.symbol_pages(term.symbol, self.limits.names)
                if in_names
            ]
            return _Resolved(
                term, [], count, count < self.limits.exact_count, table.names_of(named)
            )
        assert term.fts is not None
        forms = [term.fts]
        if term.key.startswith("w:"):
            others = [terms.quote(f) for f in self.stemmer.forms(term.words[0])[1:]]
            forms += [f for f in others if table.count(f, 1)[0]][: MAX_FORMS - 1]
        forms += [f for f in completions if f not in forms]
        resolved = _Resolved(term, forms, 0, True)
        assert resolved.match is not None
        cap = self.limits.exact_count
        if _is_phrase(term):  # its pages are its evidence (see _score)
            resolved.ids = table.first(resolved.match, cap)
            count, last = len(resolved.ids), resolved.ids[-1] if resolved.ids else 0
        else:
            count, last = table.count(resolved.match, cap)
        resolved.pages, resolved.exact = count, count < cap
        if not resolved.exact:  # as many as that per page of the index's first part
            upto = table.pages_up_to(last)
            resolved.pages = min(self.total, count * self.total // max(1, upto))
        resolved.named = dict(table.named(resolved.match, self.limits.names))
        return resolved

    # -- candidates -------------------------------------------------------------------

    def gather(self, deciding: list[_Resolved], query: terms.Query, limit: int) -> None:
        rare: list[_Resolved] = []
        budget = self.limits.rare_pages
        for resolved in sorted(deciding, key=lambda r: r.pages):
            if not resolved.exact or resolved.pages > budget:
                break
            rare.append(resolved)
            budget -= resolved.pages
        common = [r for r in deciding if r not in rare]
        for resolved in rare:
            self._score(resolved)
        driven = set(self.evidence.pages)
        self._names(deciding, query.folded)
        if common and len(driven) < limit:
            self._window(common, limit - len(driven))
        self.loose = sorted(self.evidence.pages - driven - set(self.window))
        for resolved in common:
            holding = self._holding(resolved)
            if self.window_holds_all:
                holding.update(self.window)
            self.evidence.note_all(resolved.key, ((page, PRESENT) for page in holding))

    def _score(self, resolved: _Resolved) -> None:
        """Every page holding a rare term, with its within-term weight: by bm25() for
        a word, a mere presence for a phrase (whose bm25() would cost a pass over every
        page holding its words)."""
        key, evidence = resolved.key, self.evidence
        if resolved.term.symbol is not None:
            for page, count, _ in self.table.symbol_pages(resolved.term.symbol):
                if count:
                    evidence.note(key, page, ranking.saturated(count))
            return
        self.driver.append(resolved.match or "")
        if _is_phrase(resolved.term):
            evidence.note_all(key, ((page, PRESENT) for page in resolved.ids))
            return
        for form in resolved.forms:
            rows = self.table.scored(form)
            divisor = _divisor(rows, self.total)
            if divisor:
                evidence.note_all(key, ((page, -bm25 / divisor) for page, bm25 in rows))
            else:
                evidence.note_all(key, ((page, PRESENT) for page, _ in rows))

    def _names(self, deciding: list[_Resolved], folded: str) -> None:
        """Names hits: of the candidates, and a few more pages (`Limits.loose`), those named
        with the most terms first."""
        evidence = self.evidence
        counts = Counter(page for r in deciding for page in r.named)
        ordered = sorted(counts, key=lambda p: (-counts[p], p))
        chosen = evidence.pages | set(
            [p for p in ordered if p not in evidence.pages][: self.limits.loose]
        )
        names: dict[int, str] = {}
        for resolved in deciding:
            for page, text in resolved.named.items():
                if page in chosen:
                    evidence.name(resolved.key, page)
                    names[page] = names.get(page) or text
        for page, text in names.items():
            lines = text.replace(terms.SEP, "").split("\n")
            if any(" ".join(terms.fold(line).split()) == folded for line in lines):
                evidence.exact_name.add(page)

    def _window(self, common: list[_Resolved], wanted: int) -> None:
        """The first pages holding every common term, or else any."""
        matches = [r.match for r in common if r.match]
        if not matches:
            symbol = common[0].term.symbol or ""
            self.window = [p for p, _, _ in self.table.symbol_pages(symbol, self.limits.window)]
        else:
            self.window = self.table.first(" AND ".join(matches), self.limits.window)
            self.window_holds_all = len(matches) == len(common)
            if len(self.window) < wanted and len(matches) > 1:
                self.window = self.table.first(" OR ".join(matches), self.limits.window)
                self.window_holds_all = False
        self.evidence.pages.update(self.window)

    def _holding(self, resolved: _Resolved) -> set[int]:
        """The candidates holding a common term."""
        if resolved.term.symbol is not None:
            return self.table.symbol_among(resolved.term.symbol, sorted(self.evidence.pages))
        assert resolved.match is not None
        return self._holding_match(resolved.match, skip_window=self.window_holds_all)

    def _holding_match(self, match: str, skip_window: bool) -> set[int]:
        table = self.table
        found: set[int] = set()
        if self.driver:
            found |= table.matching(f"({' OR '.join(self.driver)}) AND {match}")
        if self.window and not skip_window:
            found |= table.matching(match, (min(self.window), max(self.window)))
        if self.loose:
            found |= table.matching_among(match, self._loose_best())
        return found & self.evidence.pages

    def _loose_best(self) -> list[int]:
        """The loose candidates to look up: those found by the most names first."""
        named = Counter(p for pages in self.evidence.named.values() for p in pages)
        return sorted(sorted(self.loose, key=lambda p: -named[p])[: self.limits.loose])

    def phrases(self, order: list[tuple[int, float]], bonus: tuple[tuple[str, ...], ...]) -> None:
        """The query's phrases looked for in the text of the best candidates, as a
        regular expression over their folded text (a phrase of common words costs
        FTS5 a pass over every page holding them, even within a few pages)."""
        patterns = [self._phrase_pattern(words) for words in bonus]
        for page, _ in order:
            text = terms.fold(self.table.body(page))
            self.evidence.bonus[page] += sum(1 for p in patterns if p.search(text))

    def _phrase_pattern(self, words: tuple[str, ...]) -> re.Pattern[str]:
        if len(words) == 1:  # Chinese or Japanese
            return re.compile(re.escape(words[0]))
        parts = [re.escape(_word_start(w, self.stemmer.forms(w))) + r"\w*" for w in words]
        return re.compile(r"(?<![^\W_])" + r"[\W_]+".join(parts))

    # -- results ----------------------------------------------------------------------

    def verified(
        self,
        order: list[tuple[int, float]],
        deciding: list[_Resolved],
        weights: dict[str, float],
        limit: int,
    ) -> list[tuple[int, float]]:
        """The best `limit`, each quoted phrase it is credited with found in its text
        as written (else it loses that phrase and goes back in line)."""
        exacts = [r for r in deciding if r.term.exact is not None]
        evidence = self.evidence
        best: list[tuple[int, float]] = []
        while order and len(best) < limit:
            page, score = order.pop(0)
            claimed = [r for r in exacts if evidence.holds(r.key, page)]
            if claimed:
                text = terms.fold(self.table.body(page))
                failed = [r for r in claimed if r.term.exact and not r.term.exact.search(text)]
                if failed:
                    for resolved in failed:
                        evidence.forget(resolved.key, page)
                    score = ranking.scores(evidence, weights, {page}).get(page, 0.0)
                    if score > 0:
                        bisect.insort(order, (page, score), key=ranking.best_first)
                    continue
            best.append((page, score))
        return best

    def rows(self, best: list[tuple[int, float]], deciding: list[_Resolved]) -> list[SearchRow]:
        shown = self.table.pages([page for page, _ in best])
        rows = []
        for page, score in best:
            key, title, size = shown[page]
            held = [r for r in deciding if self.evidence.holds(r.key, page)]
            rows.append(SearchRow(key, title, self._snippet(page, size, held), score))
        return rows

    def _snippet(self, page: int, size: int, held: list[_Resolved]) -> str:
        matches = [r.match for r in held if r.match]
        marked = None
        if matches and size <= HIGHLIGHT_MAX_BYTES:
            marked = self.table.highlighted(page, " OR ".join(matches))
        if marked is None:
            words = [w for r in held for w in (*r.term.words, *_plain_forms(r))]
            marked = snippets.mark(self.table.body(page), words if matches else [])
        for resolved in held:
            if resolved.term.symbol is not None:
                marked = _mark_symbol(marked, resolved.term.symbol)
        return snippets.passage(marked)


def _is_phrase(term: terms.Term) -> bool:
    """A quoted phrase or hyphenated words: several words in a row."""
    return term.key.startswith(("q:", "h:"))


def _divisor(rows: list[tuple[int, float]], pages: int) -> float | None:
    """What FTS5's bm25() of one term multiplied its within-term weights by: the term's
    IDF, or its floor when most pages hold it (seen from the scores themselves, which
    are then tiny, so the vault's page count need not be FTS5's exactly); None when the
    IDF is too near zero to divide by."""
    if rows and max(-bm25 for _, bm25 in rows) < _FLOORED:
        return ranking.FTS5_IDF_FLOOR
    divisor = ranking.fts5_idf(pages, len(rows))
    return divisor if divisor >= _STABLE_IDF else None


def _word_start(word: str, forms: tuple[str, ...]) -> str:
    """What every inflection of a word starts with, about: its shortest form without
    a final e or y (query: quer, queries)."""
    start = min((word, *forms), key=len)
    return start[:-1] if len(start) > 3 and start[-1] in "ey" else start


def _plain_forms(resolved: _Resolved) -> list[str]:
    return [terms.fold(f.strip('"*')) for f in resolved.forms if f.startswith('"')]


def _mark_symbol(text: str, symbol: str) -> str:
    pattern = re.compile(r"(?<![\w.+#])" + re.escape(symbol) + r"(?![\w+#])", re.IGNORECASE)
    return pattern.sub(lambda m: snippets.OPEN + m.group() + snippets.CLOSE, text)
