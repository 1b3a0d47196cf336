"""One search, from a query to ranked hits with snippets. SQLite chooses the candidates
(FTS5's bm25() with column weights, `ORDER BY rank LIMIT`); Python orders a bounded few
dozen of them and makes snippets only for the hits it returns.

1. The query's terms (`terms.parse`) as the index holds them (`resolving`): each word
   looked for in its English inflections (`stems`) and its German, French or Spanish
   stems (`languages`) that the vault holds. A page matches when it holds any term
   that is not a stopword (stopwords decide only when the query has nothing else); the
   last word also matches as the start of longer words when few pages hold it as a word.
2. How many pages hold each term, counted up to `Limits.exact_count`.
3. Candidates, each a statement that returns at most `Limits.candidates` rows: the
   best pages holding every term (when some terms are rare, ranked by those alone:
   bm25() first counts the pages holding each term of its statement, a pass over most
   pages for a common one); the best holding any of the rare terms (together at most
   `Limits.rare_pages` pages); the best holding any term; the best named by one (title
   or aliases). A statement whose terms are in so many pages that `Limits.window` of
   them match is not ranked: its first pages are taken, as bm25() would tell them
   apart by almost nothing.
4. `ranking` orders the candidates roughly (every term held, names, bm25()); the best
   `Limits.rescored` are weighed again on their own text (`rescore`: BM25 with an IDF
   that stays above zero for common terms, title and alias matches, phrases), and
   ordered by that. A quoted phrase is checked against the text of the pages about to
   be shown, and each hit gets its best passage (`snippets`), found in Python: FTS5's
   own lookups of one page cost a pass over the pages holding a common term.
"""

from __future__ import annotations

from collections.abc import Container, Sequence
from dataclasses import dataclass

from lore_mcp.index import ranking, rescore, snippets, terms
from lore_mcp.index.languages import query_languages
from lore_mcp.index.resolving import NAME_WORD, Resolved, Terms, any_of, names_hold
from lore_mcp.index.search import SearchRow, SearchTable
from lore_mcp.index.stems import Stemmer


@dataclass(frozen=True, slots=True)
class Limits:
    """How much of the index one search may look at. The defaults keep a search within
    a few milliseconds at any vault size; tests give smaller ones to take the paths of
    a large vault in a small one."""

    exact_count: int = 2000  # pages per term counted one by one
    rare_pages: int = 300  # pages ranked in full, all the rarest terms together
    window: int = 200  # pages matching a statement past which it is not ranked
    candidates: int = 30  # rows a ranked statement returns, at least (3 x the hits wanted)
    names: int = 20  # pages found by name
    rescored: int = 30  # the best candidates weighed again on their own text (`rescore`)


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
    found = _Finder(table, stemmer, limits or Limits(), query_languages(text))
    found.total = pages
    wanted = [t for t in query.terms if not t.stop]
    deciding = (
        found.terms.resolve(wanted, query.prefix, limit)
        if wanted
        else found.terms.resolve(list(query.terms), None, limit)
    )
    if not deciding or limit <= 0:
        return []
    found.gather(deciding, limit)
    order = found.order(deciding, query, limit)
    return found.rows(order, deciding, query, limit)


class _Finder:
    def __init__(
        self, table: SearchTable, stemmer: Stemmer, limits: Limits, languages: tuple[str, ...]
    ) -> None:
        self.table = table
        self.limits = limits
        self.stemmer = stemmer
        self.terms = Terms(table, stemmer, languages, limits.exact_count)
        self.found: dict[int, ranking.Candidate] = {}
        self.total = 0  # pages in the vault
        self.weights: dict[str, float] = {}  # each term's share of the query's weight
        self.holding: dict[int, set[str]] = {}  # the terms a candidate is known to hold
        self.texts: dict[int, tuple[str, str, str]] = {}  # (names, headings, body) of each
        self.folded: dict[int, str] = {}  # the bodies of the best ones, folded

    # -- candidates -------------------------------------------------------------------

    def gather(self, deciding: list[Resolved], limit: int) -> None:
        """The candidates, from a few ranked statements (see the module's docstring)."""
        wanted = max(self.limits.candidates, 3 * limit)
        text = [r for r in deciding if r.match]
        if text:
            every = " AND ".join(r.match or "" for r in text)
            rare = self._rare(text) if len(text) > 1 else []
            if rare and len(rare) < len(text):
                # Ranked by the rare terms alone: bm25() of a statement counts the pages
                # holding each of its terms first, a pass over most pages for common ones.
                ranked = self.table.ranked(any_of(rare), self.limits.rare_pages)
                holders = self.table.matching_among(every, sorted(p for p, _ in ranked))
                self._note([row for row in ranked if row[0] in holders][:wanted], holds_all=True)
                self._note(ranked[:wanted])
            else:
                self._note(self._ranked(every, text, wanted), holds_all=True)
            if len(text) > 1 and len(self.found) < wanted:  # else they fill the hits
                self._note(self._ranked(any_of(text), text, wanted, every=False))
            self._names(" OR ".join(r.name_match for r in text))
        for resolved in deciding:
            if resolved.term.symbol is not None:
                self._symbol(resolved, wanted)
        if len(deciding) == 1:  # one term: every candidate holds it
            for candidate in self.found.values():
                candidate.holds_all = True

    def _rare(self, text: list[Resolved]) -> list[Resolved]:
        """The rarest terms, whose pages together are few enough to rank in full."""
        rare: list[Resolved] = []
        budget = self.limits.rare_pages
        for resolved in sorted(text, key=lambda r: r.pages):
            if not resolved.exact or resolved.pages > budget:
                break
            rare.append(resolved)
            budget -= resolved.pages
        return rare

    def _ranked(
        self, match: str, held: list[Resolved], wanted: int, every: bool = True
    ) -> list[tuple[int, float]]:
        """The best pages for `match`, pages holding `every` term or any: of all of
        them when there are few enough (one term is rare, or all are), else of the
        first `Limits.window` (by id); when even `Limits.window` pages match, the
        first of them, unranked (`rescore` orders them): bm25() would tell them apart
        by almost nothing, after a pass over every page holding its terms to count
        them (for a phrase, with their positions)."""
        rare = [r.exact and r.pages <= self.limits.rare_pages for r in held]
        if any(rare) if every else sum(r.pages for r in held) <= self.limits.rare_pages:
            return self.table.ranked(match, wanted)
        count = self.terms.count(match, self.limits.window)
        if count >= self.limits.window:
            return [(page, 0.0) for page in self.table.first(match, wanted)]
        return self.table.ranked(match, wanted)

    def _note(self, rows: list[tuple[int, float]], holds_all: bool = False) -> None:
        """Candidates from a ranked statement, their relevance its bm25() as a share of
        the best one's (a term in most pages has an IDF of almost nothing, so bm25()
        alone would tell them apart by almost nothing)."""
        best = max((-bm25 for _, bm25 in rows), default=0.0)
        for page, bm25 in rows:
            candidate = self.found.get(page)
            if candidate is None:
                relevance = -bm25 / best if best > 0 else 0.0
                self.found[page] = ranking.Candidate(relevance, holds_all)
            elif holds_all:
                candidate.holds_all = True

    def _names(self, match: str) -> None:
        """The pages named by a term (their title or aliases hold it), the best first."""
        named = f"names : {match}"
        count = self.terms.count(named, self.limits.window)
        if count >= self.limits.window:  # a word in too many names to rank them all
            rows = [(page, 0.0) for page in self.table.first(named, self.limits.names)]
        else:
            rows = self.table.ranked(named, self.limits.names)
        self._note(rows)

    def _symbol(self, resolved: Resolved, wanted: int) -> None:
        """The pages holding a symbol word: those named by it, then those holding it
        most."""
        symbol = resolved.term.symbol or ""
        for page, count, _ in self.table.symbol_pages(symbol, wanted):
            candidate = self.found.get(page)
            if candidate is None:
                candidate = self.found[page] = ranking.Candidate(ranking.saturated(max(count, 1)))
            candidate.symbol = True

    # -- order --------------------------------------------------------------------------

    def order(
        self, deciding: list[Resolved], query: terms.Query, limit: int
    ) -> list[tuple[int, float]]:
        """The candidates, best first, with their scores."""
        found = self.found
        ids = sorted(found)
        self.texts = self.table.texts(ids)
        self.weights = self._weights(deciding)
        starts = [(r, self._starts(r.term.words)) for r in deciding]
        for page, (text, _, _) in self.texts.items():
            candidate = found[page]
            folded = terms.fold(text)
            words = NAME_WORD.findall(folded)
            candidate.named = sum(
                self.weights[r.key] for r, s in starts if names_hold(r, s, text, folded, words)
            )
            lines = folded.split("\n")
            candidate.exact_name = any(" ".join(n.split()) == query.folded for n in lines)
        self._holding(deciding, ids, self.texts)
        if sum(c.holds_all for c in found.values()) < limit:
            self._coverage(deciding, [p for p in ids if not found[p].holds_all])
        order = ranking.ranked(found, len(deciding))
        self._rescore(deciding, query, [page for page, _ in order[: self.limits.rescored]])
        return ranking.ranked(found, len(deciding))

    def _rescore(self, deciding: list[Resolved], query: terms.Query, best: list[int]) -> None:
        """The best candidates weighed again on their own text (`rescore`): their
        relevance, and the query's phrases they hold; the others' relevance is gone
        (they were not weighed alike)."""
        texts = self.texts
        folded = {p: (terms.fold(texts[p][1]), terms.fold(texts[p][2])) for p in best if p in texts}
        self.folded = {page: body for page, (_, body) in folded.items()}
        total = max(self.total, *(r.pages for r in deciding))
        weighed = [self._weighed(r, ranking.idf(total, r.pages)) for r in deciding if r.match]
        held = {p: self._held(p, deciding) for p in folded}
        idfs = {r.key: ranking.idf(total, r.pages) for r in deciding}
        whole = sum(idfs.values())
        sums = rescore.relevance(folded, weighed, held, whole)
        for resolved in deciding:
            if resolved.term.symbol is not None and whole > 0:
                counts = self.table.symbol_counts(resolved.term.symbol, sorted(folded))
                for page, count in counts.items():
                    sums[page] += idfs[resolved.key] * rescore.saturated(count) / whole
        for page, candidate in self.found.items():
            candidate.weighed = sums.get(page, 0.0)
        if query.bonus:
            patterns = [rescore.pattern([self._starts(words)]) for words in query.bonus]
            for page, (_, body) in folded.items():
                self.found[page].bonus = rescore.phrases_held(body, patterns)

    def _held(self, page: int, deciding: list[Resolved]) -> set[str]:
        if self.found[page].holds_all:
            return {r.key for r in deciding}
        return self.holding.get(page, set())

    def _starts(self, words: Sequence[str]) -> list[str]:
        return [w if terms.is_cjk(w[:1]) else _word_start(w, self.stemmer) for w in words if w]

    def _weighed(self, resolved: Resolved, idf: float) -> rescore.Weighed:
        """How `rescore` finds a term in folded text: a word by its starts, or its stems
        in the other languages; several words as a phrase."""
        starts = self._starts(resolved.term.words)
        if len(starts) > 1:
            return rescore.Weighed(resolved.key, idf, phrase=rescore.pattern([starts]))
        if resolved.key.startswith("w:"):
            stems = self.terms.stems(resolved.term.words[0])
            starts += [terms.fold(s) for _, s in stems]
        return rescore.Weighed(resolved.key, idf, tuple(dict.fromkeys(starts)))

    def _holding(self, deciding: list[Resolved], ids: list[int], named: Container[int]) -> None:
        """Which candidates hold every term. The pages holding every text term are
        found by their own statement; those also need the symbol words, looked up. Of
        the others, only those that may rank first by their names or a symbol word are
        looked up, a statement a term."""
        if len(deciding) == 1:
            return
        symbols = [r.term.symbol for r in deciding if r.term.symbol is not None]
        text = [r.match for r in deciding if r.match]
        known = sorted(p for p in ids if self.found[p].holds_all)
        if symbols and text:
            held = set(known)
            for symbol in symbols:
                held &= self.table.symbol_among(symbol, sorted(held))
            for page in known:
                self.found[page].holds_all = page in held
        unsure = [p for p in ids if p not in known]
        if not unsure:
            return
        picked = [p for p in unsure if p in named and self.found[p].named > 0]
        picked += [p for p in unsure if self.found[p].symbol]
        held = set(sorted(set(picked))[: 2 * self.limits.names])
        for symbol in symbols:
            held &= self.table.symbol_among(symbol, sorted(held))
        if text and held:
            held &= self.table.matching_among(" AND ".join(text), sorted(held))
        for page in held:
            self.found[page].holds_all = True

    def _weights(self, deciding: list[Resolved]) -> dict[str, float]:
        """Each term's share of the query's weight: its IDF over the sum of them."""
        total = max(self.total, *(r.pages for r in deciding))
        weights = {r.key: ranking.idf(total, r.pages) for r in deciding}
        whole = sum(weights.values()) or 1.0
        return {key: weight / whole for key, weight in weights.items()}

    def _coverage(self, deciding: list[Resolved], ids: list[int]) -> None:
        """For the candidates holding only some terms, when they are needed to fill
        the hits: the share of the query's weight (each term's IDF) they hold, looked
        up a statement a term."""
        weights = self.weights
        held = dict.fromkeys(ids, 0.0)
        for resolved in deciding:
            if resolved.term.symbol is not None:
                holding = self.table.symbol_among(resolved.term.symbol, ids)
            else:
                holding = self.table.matching_among(resolved.match or "", ids)
            for page in holding:
                held[page] += weights[resolved.key]
                self.holding.setdefault(page, set()).add(resolved.key)
        for page, share in held.items():
            self.found[page].held = share

    # -- results ----------------------------------------------------------------------

    def rows(
        self,
        order: list[tuple[int, float]],
        deciding: list[Resolved],
        query: terms.Query,
        limit: int,
    ) -> list[SearchRow]:
        """The best `limit`, each with its snippet; a page credited with a quoted phrase
        that its text does not hold as written drops to the pages holding only some
        terms, or out when the phrases were all it held."""
        exacts = [r for r in deciding if r.term.exact is not None]
        best: list[tuple[int, float]] = []
        for page, score in order:
            if len(best) >= limit:
                break
            if exacts:
                text = terms.fold(self._body(page))
                missing = [r for r in exacts if r.term.exact and not r.term.exact.search(text)]
                if len(missing) == len(deciding):
                    continue
                if missing and score >= 1.0:
                    best.append((page, score - 1.0))
                    continue
            best.append((page, score))
        best.sort(key=ranking.best_first)
        shown = self.table.pages([page for page, _ in best])
        marking = self._marking(deciding, query)
        return [
            SearchRow(shown[page][0], shown[page][1], self._snippet(page, marking, deciding), s)
            for page, s in best
            if page in shown
        ]

    def _body(self, page: int) -> str:
        text = self.texts.get(page)
        return self.table.body(page) if text is None else text[2]

    def _marking(self, deciding: list[Resolved], query: terms.Query) -> list[str]:
        """What a snippet marks: the starts of the query's words in any inflection,
        the forms the vault holds, their stems in the other languages, and a run of
        Chinese or Japanese whole (its parts overlap)."""
        words = [piece[0] for piece in query.bonus if len(piece) == 1]
        for resolved in deciding:
            if not resolved.match:
                continue
            words += [*resolved.term.words, *self._starts(resolved.term.words)]
            words += resolved.plain_forms
            if resolved.key.startswith("w:"):
                stems = self.terms.stems(resolved.term.words[0])
                words += [terms.fold(s) for _, s in stems]
        return list(dict.fromkeys(words))

    def _snippet(self, page: int, marking: list[str], deciding: list[Resolved]) -> str:
        """The page's passage with the most of the query's words (`snippets`), marked,
        chosen from the text up to a little past where each word is first found."""
        body = self._body(page)
        folded = self.folded.get(page)
        if folded is None or len(folded) != len(body):
            folded = terms.fold(body)
        if len(folded) == len(body):  # what is marked is where it was found
            cut = snippets.reach(folded, marking)
            body, folded = body[:cut], folded[:cut]
        marked = snippets.mark(body, marking, folded if len(folded) == len(body) else None)
        for resolved in deciding:
            if resolved.term.symbol is not None:
                marked = snippets.mark_symbol(marked, resolved.term.symbol)
        return snippets.passage(marked)


def _word_start(word: str, stemmer: Stemmer) -> str:
    return rescore.word_start(word, stemmer.forms(word))
