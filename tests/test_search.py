"""Full-text search: how queries are read, what matches and in what order, snippets,
and the paths a large vault takes (through small limits, on a small vault)."""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from conftest import write
from lore_mcp import vault_ops as ops
from lore_mcp.index import Index, PageRow, finder, rescore, search_text, terms
from lore_mcp.index.stems import Stemmer
from lore_mcp.vault_ops import AppState

DOCS = {
    "Linking/Internal links.md": (
        "---\naliases: [Wikilinks]\n---\n# Internal links\n\nLinks connect notes.\n\n"
        "## Link to a heading in a note\n\nAdd a hash sign after the note name: "
        "`[[Note#Heading]]`.\n"
    ),
    "Linking/Embed files.md": (
        "# Embed files\n\nAn exclamation mark embeds what a link points at.\n\n"
        "## Embed a PDF\n\n`![[Manual.pdf]]` shows the document in a viewer.\n"
    ),
    "Editing/Formatting.md": (
        "# Formatting\n\nStart a line with a hash sign to make a heading. "
        "A heading gives a note its outline. Bold text is `**bold**`.\n"
    ),
    "Editing/Attachments.md": "# Attachments\n\nSupported formats: images, audio, PDF files.\n",
    "Developers/C++.md": "# C++\n\nThe C++ wrapper is a header-only library.\n",
    "Developers/C API.md": "# C API\n\nA plain C interface; the [[C++]] wrapper uses it.\n",
    "Developers/C#.md": "# C#\n\nThe C# binding for the .NET SDK.\n",
    "Developers/Node.js.md": "# Node.js\n\nPlugins run in Node.js on desktop.\n",
    "Release notes/v1.10.md": "# v1.10\n\nFaster search.\n",
    "Release notes/v1.1.md": "# v1.1\n\nCanvas.\n",
    "Sync/Encryption.md": (
        "---\ntags: [security]\naliases: [Secret keeping]\n---\n# Encryption\n\n"
        "Your notes are safe.\n\n- **Encryption** never covers the local copy.\n"
    ),
}


@pytest.fixture
def docs(vault_dir: Path) -> Iterator[AppState]:
    for rel, text in DOCS.items():
        write(vault_dir, rel, text)
    opened = ops.open_vault(vault_dir)
    yield opened
    opened.close()


def slugs(vault: AppState, query: str, limit: int = 10) -> list[str]:
    return [hit.slug for hit in ops.search(vault, query, limit).hits]


# -- reading queries ------------------------------------------------------------------


def test_query_terms() -> None:
    query = terms.parse("How do I embed a PDF")
    assert [(t.key, t.stop) for t in query.terms if not t.stop] == [
        ("w:embed", False),
        ("w:pdf", False),
    ]
    assert {t.key for t in query.terms if t.stop} == {"w:how", "w:do", "w:i", "w:a"}
    assert query.bonus == (("embed", "a", "pdf"),)
    assert query.prefix is not None and query.prefix.fts == '"PDF"*'
    symbols = terms.parse("C++ C# .NET node.js v1.10")
    assert [t.symbol for t in symbols.terms] == ["c++", "c#", ".net", "node.js", "v1.10"]
    assert symbols.prefix is None
    quoted = terms.parse('"star wars" AND "x')
    assert quoted.terms[0].fts == '"star wars"' and quoted.terms[0].exact is not None
    assert [t.fts for t in quoted.terms[1:]] == ['"AND"', '"x"']  # operators are words
    cjk = terms.parse("如何链接到标题")
    assert [t.key for t in cjk.terms] == ["c:链接", "c:接到", "c:到标", "c:标题"]
    assert cjk.bonus == (("链接到标题",),)
    assert [t.key for t in terms.parse("read-only").terms] == ["h:read only", "w:read", "w:only"]
    assert terms.parse("  ***  ").terms == ()
    assert terms.quote('a "b"') == '"a ""b"""'


def test_fts_text_splits_only_cjk() -> None:
    assert terms.fts_text("plain text") == "plain text"
    assert terms.fts_text("a記b") == "a\x1f記\x1fb"
    assert terms.fts_text("記憶 x") == "\x1f記\x1f憶\x1f x"


def test_symbol_words_and_headings() -> None:
    text = "Use C++ and C#, the .NET SDK, node.js. See v1.10 (e.g. here) ## Not C++17 #tag"
    assert terms.symbol_words(text) == {
        "c++": 1,
        "c#": 1,
        ".net": 1,
        "node.js": 1,
        "v1.10": 1,
        "e.g": 1,
    }
    assert terms.headings("# Title\n\ntext\n## Sub ##\n   ### Deep\n#tag\n") == "Title\nSub\nDeep"
    assert terms.fold("Étiquettes が Straße") == "etiquettes が straße"


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("aZ1_.+#-é٣Ω \n"), max_size=16))
@example("a.b .c +x# d.. .é1 a_#")
def test_symbol_words_finds_what_the_symbol_pattern_finds_in_the_whole_text(text: str) -> None:
    """The quick hints miss no symbol word the pattern finds, and make up none."""
    whole = Counter(match.group().lower() for match in terms.SYMBOL.finditer(text))
    assert terms.symbol_words(text) == whole


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=12))
@example("Ωμέγα Й e\u0301 \u212b が \u1100\u1161 \u0410\u0306")
def test_fold_takes_off_latin_greek_and_cyrillic_marks_and_nothing_else(text: str) -> None:
    """`fold` is lowercase, decomposed, without the marks U+0300-U+036F, composed again,
    whichever way it gets there (text with no such mark is only lowercased)."""
    bare = unicodedata.normalize("NFD", text.lower())
    expected = unicodedata.normalize(
        "NFC", "".join(c for c in bare if not "\u0300" <= c <= "\u036f")
    )
    assert terms.fold(text) == expected


# Letters with marks, bare ones, the marks fold takes off, and marks it keeps that compose
# (Arabic maddah and hamza, kana voicing, Devanagari nukta) or are kept apart (U+2126).
_MARKS = "éÉüÅǘệйЙΐώaeoiукかाا\u0301\u0308\u0323\u0334\u0345\u0653\u0655\u3099\u093c\u2126 "


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(_MARKS), max_size=10))
@example("\u0627\u0301\u0653")  # alef, acute, maddah: with the acute gone, they compose
def test_fold_of_marks_beside_marks_that_compose(text: str) -> None:
    """Where folding a char by itself leaves a mark that composes with what is before it,
    `fold` still gives the whole text's folding."""
    bare = unicodedata.normalize("NFD", text.lower())
    expected = unicodedata.normalize(
        "NFC", "".join(c for c in bare if not "\u0300" <= c <= "\u036f")
    )
    assert terms.fold(text) == expected


def test_inflections_reach_every_stem() -> None:
    stemmer = Stemmer()
    try:
        # Porter stems "embed" to "emb" but "embedding" to "embed": both are looked for.
        assert "embed" in stemmer.forms("embedding")
        assert len(stemmer.forms("embed")) > 1  # and a form that stems to "embed"
        assert stemmer.forms("query") == ("query",)  # its inflections share its stem
        assert stemmer.forms("intégrer") == ("intégrer",)  # English only
    finally:
        stemmer.close()


def test_any_query_is_safe(tmp_path: Path) -> None:
    index = Index(tmp_path / "lore.db")
    with index.write():
        index.put_pages(
            [
                (
                    PageRow("a", "Alpha", "a.md"),
                    search_text("Alpha", (), "some text AND or NOT near 記憶 C++"),
                )
            ]
        )
    table = index.search

    @settings(max_examples=100, deadline=None)
    @given(query=st.text(max_size=60))
    def search(query: str) -> None:
        finder.search(table, table.stemmer, query, 5, 1)
        table.pages_matching(query, 5)

    try:
        search()
    finally:
        index.close()


# -- what matches, and in what order ----------------------------------------------------


def test_questions_find_their_pages(docs: AppState) -> None:
    assert "linking/internal-links" in slugs(docs, "how do I link to a heading")[:3]
    assert "linking/embed-files" in slugs(docs, "How do I embed a PDF")[:3]
    assert slugs(docs, "embedding")[0] == "linking/embed-files"  # "embed", "embeds"
    assert slugs(docs, "C++")[:2] == ["developers/c++", "developers/c-api"]
    assert slugs(docs, "C#")[0] == "developers/c"
    assert slugs(docs, ".NET") == ["developers/c"]
    assert slugs(docs, "node.js")[0] == "developers/node.js"
    assert slugs(docs, "v1.10") == ["release-notes/v1.10"]
    assert slugs(docs, "wikilinks") == ["linking/internal-links"]  # an alias


def test_any_word_matches_and_pages_with_all_rank_first(docs: AppState) -> None:
    hits = ops.search(docs, "heading outline zzzmissing").hits
    assert hits[0].slug == "editing/formatting"  # both words that the vault holds
    assert hits[0].score > 1.0 > hits[1].score > 0.0
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    # Stopwords alone decide nothing, unless the query has nothing else.
    assert slugs(docs, "how do I zzzmissing") == []
    assert slugs(docs, "what is F#") == []  # no page holds F#: "what is" decides nothing
    assert slugs(docs, "the")


def test_common_words_still_score(vault_dir: Path) -> None:
    for i in range(6):
        write(vault_dir, f"P{i}.md", "memory " * (i + 1) + "filler words " * 20)
    opened = ops.open_vault(vault_dir)
    try:
        hits = ops.search(opened, "memory").hits
        assert len(hits) == 6 and all(h.score > 1.0 for h in hits)
        assert hits[0].slug == "p5"  # the most occurrences
    finally:
        opened.close()


def test_title_weighs_more_than_body(vault_dir: Path) -> None:
    write(vault_dir, "Gardening.md", "Notes on soil.\n")
    write(vault_dir, "Cooking.md", "Gardening gardening gardening in the kitchen.\n")
    opened = ops.open_vault(vault_dir)
    try:
        assert slugs(opened, "gardening") == ["gardening", "cooking"]
    finally:
        opened.close()


def test_stems_by_the_language_of_page_and_query(vault_dir: Path) -> None:
    write(
        vault_dir,
        "Papierkorb.md",
        "Gelöschte Notizen kommen in den Papierkorb, und sie sind dort.\n",
    )
    write(vault_dir, "Étiquettes.md", "Une note n'a pas de titre, et elle est dans le dossier.\n")
    write(vault_dir, "Atajos.md", "El atajo pasa la nota a la papelera y la borra de la lista.\n")
    opened = ops.open_vault(vault_dir)
    try:
        assert slugs(opened, "wie kann ich eine Notiz löschen") == ["papierkorb"]
        # "pasa" stems to "pas" in Spanish, as French "pas" does: only Spanish pages count
        assert slugs(opened, "qué pasa si hay un conflicto") == ["atajos"]
    finally:
        opened.close()


def test_common_words_ranked_by_how_often_a_page_holds_them(vault_dir: Path) -> None:
    # Every page holds both words, so FTS5's bm25() gives them an IDF of almost nothing.
    for i in range(5):
        write(vault_dir, f"P{i}.md", "tool read " + "tools " * i + "other words here. " * 5)
    opened = ops.open_vault(vault_dir)
    try:
        assert slugs(opened, "tools read")[:2] == ["p4", "p3"]
    finally:
        opened.close()


def test_rescore_finds_words_as_the_tokenizer_would() -> None:
    assert rescore.count_starts("notes, note; keynote delete_note", "note") == 3
    assert rescore.count_starts("记忆和长期记忆", "记忆") == 2
    assert rescore.count_starts("note " * 40, "note", most=5) == 5
    read_only = rescore.pattern([["read", "onl"]])
    assert rescore.holds("which tools are read-only?", read_only)
    assert not rescore.holds("unread-only", read_only)
    weighed = rescore.Weighed("w:note", 1.0, ("note",))
    sums = rescore.relevance(
        {1: ("", "note " * 3 + "x " * 10), 2: ("", "note " + "x " * 12), 3: ("", "x " * 13)},
        [weighed],
        {},
        1.0,
    )
    assert sums[1] > sums[2] > sums[3] == 0.0


def test_quoted_phrases_are_exact(vault_dir: Path) -> None:
    write(vault_dir, "A.md", "We compared embedding models today.\n")
    write(vault_dir, "B.md", "An embedded model is small.\n")
    opened = ops.open_vault(vault_dir)
    try:
        assert slugs(opened, '"embedding models"') == ["a"]
        assert set(slugs(opened, "embedding models")) == {"a", "b"}
        assert set(slugs(opened, "embed")) == {"a", "b"}
    finally:
        opened.close()


def test_last_word_is_a_prefix(brain: AppState) -> None:
    # "placeh" is a word of one page (Search Tools quotes it): too few, so it is also
    # the start of "placeholder".
    assert slugs(brain, "placeh")[0] == "concepts/placeholders"
    assert "tools/search-tools" in slugs(brain, "placeh")
    assert "concepts/placeholders" in slugs(brain, "placehol")
    assert "concepts/persistence" in slugs(brain, "memo")
    assert slugs(brain, "placeholders ") and not slugs(brain, "zzzq")


def test_chinese_and_japanese_words_inside_runs(vault_dir: Path) -> None:
    write(vault_dir, "zh.md", "记忆保存在文件里，不在上下文里。\n")
    write(vault_dir, "ja.md", "長期記憶の話をしよう。\n")
    opened = ops.open_vault(vault_dir)
    try:
        assert slugs(opened, "文件") == ["zh"]
        assert slugs(opened, "記憶") == ["ja"]
        assert slugs(opened, "憶") == ["ja"]
        assert slugs(opened, "记忆保存在哪里")[0] == "zh"  # 哪里 (where) is a stopword
        hit = ops.search(opened, "上下文").hits[0]
        assert "**上下文**" in hit.snippet and "\x1f" not in hit.snippet
    finally:
        opened.close()


# -- snippets -----------------------------------------------------------------------


def test_snippets_keep_markdown_whole(docs: AppState) -> None:
    hit = ops.search(docs, "encryption").hits[0]
    assert hit.slug == "sync/encryption"
    assert "****" not in hit.snippet and "**Encryption**" in hit.snippet
    assert "aliases" not in hit.snippet and "security" not in hit.snippet  # no frontmatter
    for query in ("bold", "heading", "C++", "link to a heading"):
        for found in ops.search(docs, query).hits:
            assert "****" not in found.snippet and "---" not in found.snippet, query


def test_snippets_show_the_passage_with_most_query_words(vault_dir: Path) -> None:
    filler = "Nothing to see in this line at all. " * 40
    write(vault_dir, "Page.md", f"palace {filler}The palace garden stood here. {filler}")
    opened = ops.open_vault(vault_dir)
    try:
        snippet = ops.search(opened, "palace garden").hits[0].snippet
        assert "The **palace garden** stood here." in snippet
        assert snippet.startswith("…") and snippet.endswith("…")
    finally:
        opened.close()


def test_long_pages_are_marked(vault_dir: Path) -> None:
    filler = "Nothing to see in this line at all.\n" * 9000
    write(vault_dir, "Long.md", filler + "The Palaces stood here. " + "palace " * 10)
    write(vault_dir, "Kana.md", filler + "長期記憶の話をしよう。\n")
    opened = ops.open_vault(vault_dir)
    try:
        hit = ops.search(opened, "palace").hits[0]
        assert "The **Palaces** stood here. **palace palace" in hit.snippet
        kana = ops.search(opened, "記憶").hits[0].snippet
        assert "長期**記憶**の話をしよう" in kana and "\x1f" not in kana
    finally:
        opened.close()


# -- a large vault's paths ------------------------------------------------------------


def test_common_words_take_a_window(vault_dir: Path) -> None:
    # Every page holds "memory"; with limits this small it counts as common, so the
    # search takes the first pages holding it plus the pages named by it.
    for i in range(12):
        write(vault_dir, f"Note {i:02}.md", f"memory and recall, page {i}.\n")
    write(vault_dir, "Memory.md", "About memory, and the rare word quasar.\n")
    opened = ops.open_vault(vault_dir)
    small = finder.Limits(exact_count=4, rare_pages=4, window=3, candidates=3, names=2)
    table = opened.index.search
    try:

        def search(query: str) -> list[str]:
            rows = finder.search(table, table.stemmer, query, 3, 13, limits=small)
            return [opened.handle(row.key) for row in rows]

        assert search("memory")[0] == "memory"  # named by it
        assert len(search("memory")) == 3
        assert search("quasar memory")[0] == "memory"
        assert search("recall memory")[:1] != ["memory"]  # pages holding both come first
        assert table.pages_matching("memory recall", 5)
    finally:
        opened.close()
