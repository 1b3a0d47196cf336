"""Stems beyond English: a page's or a query's language, told cheaply by its stopwords,
and the Snowball stems (PyStemmer) of its words in German, French or Spanish.

The FTS tokenizer stems English (Porter) on every page. A page written in German,
French or Spanish also gets its words' Snowball stems in a column of their own, and a
query in one of those languages (or in none that its stopwords tell) looks for its
words' stems there too: "gelöschte" finds "löschen", "synchroniser" finds
"synchronisation". Pure functions, but for the stemmers' caches.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable

import Stemmer

from lore_mcp.index.stopwords import ENGLISH, FRENCH, GERMAN, SPANISH

STEMMED = {"de": "german", "fr": "french", "es": "spanish"}  # besides English (Porter)
# How much of a page its language is told from: 1000 characters tell the language of
# every page of `bench/quality/` (four languages) and `brain/` as 2000 do, in half the time.
SAMPLE_CHARS = 1000
_MIN_HITS = 3  # stopwords a page needs to be told a language
_WORD = re.compile(r"[^\W\d_]{2,}")
_CACHE_WORDS = 200_000  # stems kept per language; the cache starts afresh past that


def _own(words: frozenset[str], *others: frozenset[str]) -> frozenset[str]:
    """The stopwords of one language that are no stopword of the others."""
    return words.difference(*others)


_STOPWORDS = {
    "en": _own(ENGLISH, FRENCH, GERMAN, SPANISH),
    "de": _own(GERMAN, ENGLISH, FRENCH, SPANISH),
    "fr": _own(FRENCH, ENGLISH, GERMAN, SPANISH),
    "es": _own(SPANISH, ENGLISH, FRENCH, GERMAN),
}
_LANGUAGE_OF = {word: language for language, stops in _STOPWORDS.items() for word in stops}
_OWN_STOPWORDS = frozenset(_LANGUAGE_OF)
_FOLD = str.maketrans("àáâäãçèéêëìíîïñòóôöõùúûüß", "aaaaaceeeeiiiinooooouuuus")
_FOLDED = re.compile("[" + "".join(map(chr, _FOLD)) + "]")  # what `_FOLD` changes


def words(text: str) -> list[str]:
    """The words of a text, lowercased (numbers and symbols left out)."""
    return _WORD.findall(text.lower())


def detect(sample: Iterable[str], minimum: int = _MIN_HITS) -> str | None:
    """The language ("en", "de", "fr", "es") with the most of its own stopwords among
    these lowercased words, if there are at least `minimum` of them (each counted
    once)."""
    return _best({word if word.isascii() else word.translate(_FOLD) for word in sample}, minimum)


def _best(seen: Iterable[str], minimum: int) -> str | None:
    counts = dict.fromkeys(_STOPWORDS, 0)  # in this order, which breaks ties
    for word in _OWN_STOPWORDS.intersection(seen):
        counts[_LANGUAGE_OF[word]] += 1
    best, hits = None, 0
    for language, found in counts.items():
        if found > hits:
            best, hits = language, found
    return best if hits >= minimum else None


def page_language(text: str) -> str | None:
    """The language of a page, from the stopwords of its first `SAMPLE_CHARS` (split
    at white space: a word before a comma or a full stop is missed, which costs little
    against many times the speed)."""
    sample = text[:SAMPLE_CHARS].lower()
    if not sample.isascii() and _FOLDED.search(sample):  # a Chinese page has none to fold
        sample = sample.translate(_FOLD)
    return _best(sample.split(), _MIN_HITS)


def query_languages(text: str) -> tuple[str, ...]:
    """The languages whose stems a query looks for: the one its stopwords tell, or
    when they tell none (a word or two), every stemmed language."""
    found = detect(words(text), minimum=1)
    if found == "en":
        return ()
    return (found,) if found in STEMMED else tuple(STEMMED)


class Stems:
    """Snowball stemmers by language, with a cache of the stems they gave."""

    def __init__(self) -> None:
        self._stemmers = {lang: Stemmer.Stemmer(name) for lang, name in STEMMED.items()}
        self._caches: dict[str, dict[str, str]] = {lang: {} for lang in STEMMED}
        self._lock = threading.Lock()

    def stem(self, language: str, word: str) -> str:
        cache = self._caches[language]
        found = cache.get(word)
        if found is None:
            with self._lock:
                found = str(self._stemmers[language].stemWord(word))
                if len(cache) >= _CACHE_WORDS:
                    cache.clear()
                cache[word] = found
        return found

    def text(self, language: str, text: str) -> str:
        """The stems of a text's words, each behind the language's code ("delösch"),
        space-separated, in order."""
        stem = self.stem
        return " ".join(language + stem(language, w) for w in words(text))

    def of_word(self, word: str, languages: Iterable[str]) -> list[tuple[str, str]]:
        """A query word's (language, stem) in these languages (German participles
        also without their `ge-`: "gelöscht" is looked for as "lösch"), each once."""
        found: dict[tuple[str, str], None] = {}
        lowered = word.lower()
        for language in languages:
            found[language, self.stem(language, lowered)] = None
            if language == "de" and lowered.startswith("ge") and len(lowered) > 5:
                found[language, self.stem(language, lowered[2:])] = None
        return [(language, s) for language, s in found if len(s) >= 2]


STEMS = Stems()  # the process's stemmers, which every index shares
