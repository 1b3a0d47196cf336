"""Tests for lore_mcp.links: wiki-link extraction, rewriting and mention search."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from bisect import bisect_right
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lore_mcp import links
from lore_mcp.links import Link, extract_links
from lore_mcp.markdown import line_text
from lore_mcp.mentions import find_mentions
from lore_mcp.rewrites import rewrite_links


def written(link: Link) -> tuple[str, str | None, str | None, bool, int]:
    """What a link says (target, alias, fragment, embed, line), without its place."""
    return (link.target, link.alias, link.fragment, link.embed, link.line)


def wiki(markdown: str) -> list[Link]:
    """The wiki links of a page (Markdown links have tests of their own)."""
    return [link for link in extract_links(markdown) if not link.markdown]


def only(markdown: str) -> Link:
    found = wiki(markdown)
    assert len(found) == 1, found
    return found[0]


def targets(markdown: str) -> list[str]:
    return [link.target for link in wiki(markdown)]


def lines(markdown: str) -> list[tuple[str, int]]:
    return [(link.target, link.line) for link in wiki(markdown)]


# --- syntax -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("[[Page]]", Link("Page", None, None, False, 1)),
        ("[[Page|shown text]]", Link("Page", "shown text", None, False, 1)),
        ("[[Page#Some Heading]]", Link("Page", None, "Some Heading", False, 1)),
        ("[[Page#Heading|alias]]", Link("Page", "alias", "Heading", False, 1)),
        ("[[Page^block1]]", Link("Page^block1", None, None, False, 1)),  # no `#`: a name
        ("[[Page#^block1]]", Link("Page", None, "^block1", False, 1)),
        ("[[Page#^block1|see]]", Link("Page", "see", "^block1", False, 1)),
        ("[[folder/My Page]]", Link("folder/My Page", None, None, False, 1)),
        ("[[folder/My Page.md]]", Link("folder/My Page.md", None, None, False, 1)),
        ("[[./sibling]]", Link("./sibling", None, None, False, 1)),
        ("![[Page]]", Link("Page", None, None, True, 1)),
        ("![[diagram.png|300]]", Link("diagram.png", "300", None, True, 1)),
        ("[[#Heading]]", Link("", None, "Heading", False, 1)),
        ("[[#^block]]", Link("", None, "^block", False, 1)),
        ("[[  Page  #  Heading  |  alias  ]]", Link("Page", "alias", "Heading", False, 1)),
        ("[[Page|]]", Link("Page", None, None, False, 1)),
        ("[[Page#]]", Link("Page", None, None, False, 1)),
        ("[[Page\\|alias]]", Link("Page", "alias", None, False, 1)),
        ("[[Page|a|b]]", Link("Page", "a|b", None, False, 1)),
        ("[[Page#A#B]]", Link("Page", None, "A#B", False, 1)),
        ("[[Ünïcode Ω]]", Link("Ünïcode Ω", None, None, False, 1)),
    ],
)
def test_link_syntax(markdown: str, expected: Link) -> None:
    assert written(only(f"Text {markdown} more.")) == written(expected)


def test_links_in_document_order_with_surrounding_text() -> None:
    markdown = "See [[a]], ![[b.png]] and [[c|C]].\n\nThen [[#top]]."
    assert targets(markdown) == ["a", "b.png", "c", ""]


def test_same_page_link_is_not_an_edge() -> None:
    assert only("[[#Heading]]").is_same_page
    assert not only("[[Page#Heading]]").is_same_page


@pytest.mark.parametrize(
    ("target", "attachment"),
    [
        ("diagram.png", True),
        ("report.PDF", True),
        ("folder/board.canvas", True),
        ("clip.mp4", True),
        ("folder/archive.tar.gz", False),  # not a format Obsidian opens: a page name
        ("slides.pptx", False),
        ("Node.js", False),
        ("page.md", False),
        ("Page.MD", False),
        ("v1.2 notes", False),
        ("v1.2", False),
        ("release 2.0", False),
        ("Mr. Smith", False),
        ("folder.d/page", False),
        ("name.toolong", False),
        ("plain", False),
    ],
)
def test_is_attachment(target: str, attachment: bool) -> None:
    assert only(f"[[{target}]]").is_attachment is attachment


def test_table_cell_with_escaped_pipe() -> None:
    markdown = "| Link | Note |\n|---|---|\n| [[page\\|alias]] | x |\n"
    assert [written(link) for link in extract_links(markdown)] == [
        ("page", "alias", None, False, 3)
    ]


def test_unescaped_pipe_in_a_table_cell_is_an_alias_as_obsidian_reads_it() -> None:
    # Was: no link (the pipe split the cell). Links are now read from the source, as
    # Obsidian reads them.
    markdown = "| a | b |\n|---|---|\n| [[page|alias]] | x |\n"
    assert [written(link) for link in extract_links(markdown)] == [
        ("page", "alias", None, False, 3)
    ]


# --- what is not a link -------------------------------------------------------------------


@pytest.mark.parametrize(
    "markdown",
    [
        "`[[x]]`",
        "``code with [[x]] and ` inside``",
        "`multi\n[[x]] line code span`",
        "```\n[[x]]\n```",
        "```python\n# [[x]]\n```",
        "~~~\n[[x]]\n~~~",
        "Para.\n\n    [[x]] indented code\n",
        "\\[[x]]",
        "[[]]",
        "[[   ]]",
        "[[|alias]]",
        "[[a\nb]]",
        "[[a]b]]",
        "[[a",
        "[[a]",
        '<span title="[[x]]">t</span>',
        "<span data-x='[[x]]' hidden\n  class=\"[[y]]\"/>",
        "<https://example.com/[[x]]>",
        "[text](<[[x]]>)",
        "[text]([[x]])",
        "see [text](x[[y]]) end",
        "<!-- [[x]] -->",
    ],
)
def test_not_links(markdown: str) -> None:
    assert extract_links(markdown) == []


def test_what_is_not_an_html_tag_hides_nothing() -> None:
    # An attribute is a name, maybe `=` and a value: `[[a]]` is none of these.
    assert targets("p <x [[a]]> and <b =[[c]]> and </i [[d]]>") == ["a", "c", "d"]
    assert targets("p <a href='x'>[[e]]</a> <br/>[[f]]") == ["e", "f"]


def test_escaped_backslash_before_link_keeps_the_link() -> None:
    assert targets("\\\\[[x]]") == ["x"]


def test_code_and_real_link_on_one_line() -> None:
    assert targets("`[[a]]` and [[b]] and ``[[c]]``") == ["b"]


def test_link_inside_markdown_link_label_and_image_alt() -> None:
    assert targets("[see [[a]]](https://x.org) ![pic of [[b]]](b.png)") == ["a", "b"]


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("[t]([[x]]) [[y]]", ["y"]),  # the destination hides what it holds
        ("[t](<[[x]] and more>) [[y]]", ["y"]),
        ("[t](x[[y]] 'a [[z]] title') [[w]]", ["w"]),
        ('[t](x "[[y]]"\n) [[z]]', ["z"]),  # and a Markdown link to x
        ("[t](x ([[y]])) [[z]]", ["z"]),
        ("[t]() [[x]]", ["x"]),
        ("[t](a b [[x]])", ["x"]),  # a space in a destination: no Markdown link
        ("[t](x 'title' [[y]])", ["y"]),
        ("[t](<1\n[[y]]>)", ["y"]),
        ("[t](x\n[[y]])", ["y"]),
        ("[t](javascript:[[x]])", []),  # any destination, as links are not rendered
        ("[t]\n([[x]])", ["x"]),
        ("[t]([[x]]", ["x"]),
    ],
)
def test_markdown_link_destinations_as_markdown_it_reads_them(
    markdown: str, expected: list[str]
) -> None:
    assert targets(markdown) == expected
    check_line_scan(markdown)


def test_garbage_brackets_do_not_crash() -> None:
    assert targets("[[[[x]]") in (["x"], [])
    assert targets("[[[[[[") == []
    assert targets("]]]][[[[") == []
    assert targets("[[a[[b]]") == ["b"]
    assert targets("![[![[x]]") == ["x"]


def test_deep_nesting_ends() -> None:
    for garbage in ("[" * 5000, "[[" * 2500 + "x]]", "![[" * 2000, "[[a]" * 1500):
        assert len(extract_links(garbage)) <= 1


_BRACKET_STORMS = (
    "[",
    "[[",
    "![[",
    "[[a]",
    "[[[a]",
    "[\n",
    "[a](",
    "[a](x ",
    "[a]((",
    "x <!--",
    "<b>",
    "<a b='",
    "<a b c ",
)


@pytest.mark.slow
def test_pages_full_of_brackets_are_read_in_one_pass() -> None:
    """Unclosed brackets, parens and comments are each read once, not once per opener
    (which made a 30 KB page take seconds, and a megabyte one hours). A child process
    reads 100 000 characters of each; the timeout only stops a hang."""
    script = (
        "from lore_mcp.links import extract_links\n"
        f"for piece in {_BRACKET_STORMS!r}:\n"
        "    links = extract_links(piece * (100_000 // len(piece)) + ' [[end]]')\n"
        "    assert links[-1].target == 'end', piece\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)


# --- line numbers -------------------------------------------------------------------------


def test_lines_in_paragraphs() -> None:
    markdown = "[[a]] first\nsecond [[b]]\n\n\nthird\n   indented continuation [[c]]\n"
    assert lines(markdown) == [("a", 1), ("b", 2), ("c", 6)]


def test_lines_in_headings() -> None:
    markdown = "# [[a]]\n\nSetext [[b]]\nstill heading [[c]]\n===\n\n## Closed [[d]] ##\n"
    assert lines(markdown) == [("a", 1), ("b", 3), ("c", 4), ("d", 7)]


def test_lines_in_lists() -> None:
    markdown = (
        "- one [[a]]\n"
        "- two\n"
        "  continued [[b]]\n"
        "  - nested [[c]]\n"
        "\n"
        "    more nested [[d]]\n"
        "1. ordered [[e]]\n"
        "- [ ] task [[f]]\n"
    )
    assert lines(markdown) == [("a", 1), ("b", 3), ("c", 4), ("d", 6), ("e", 7), ("f", 8)]


def test_lines_in_blockquotes() -> None:
    markdown = "> quote [[a]]\n> more\n> [[b]]\nlazy [[c]]\n\n> > deep\n> > [[d]]\n"
    assert lines(markdown) == [("a", 1), ("b", 3), ("c", 4), ("d", 7)]


def test_lines_in_tables() -> None:
    markdown = "Intro\n\n| [[h1]] | [[h2]] |\n|---|---|\n| [[a]] | b |\n| c | [[d]] |\n"
    assert lines(markdown) == [("h1", 3), ("h2", 3), ("a", 5), ("d", 6)]


def test_lines_after_front_matter_and_code() -> None:
    markdown = "---\ntitle: Page\ntags: [x]\n---\n\n```\n[[not]]\n```\nBody [[a]]\n\n***\n[[b]]\n"
    assert lines(markdown) == [("a", 9), ("b", 12)]


def test_lines_with_image_alt_on_a_later_line() -> None:
    markdown = "first\nsecond\n![alt\nwith [[a]]](x.png) [[b]]\n"
    assert lines(markdown) == [("a", 4), ("b", 4)]


def test_lines_after_multiline_code_span_and_html() -> None:
    markdown = "`code\nspan` [[a]]\n<span\ntitle='x'> [[b]]\n"
    assert lines(markdown) == [("a", 2), ("b", 4)]


def test_lines_when_markdown_it_trims_whitespace_only_lines() -> None:
    # NBSP, U+3000 and U+2028 lines are not blank to CommonMark, but are trimmed from the text.
    markdown = "\xa0\n\u3000\n[[a]]\n\n> \xa0\n> [[b]] x\n\n\u2028\n[[c]]\n===\n"
    assert lines(markdown) == [("a", 3), ("b", 6), ("c", 9)]
    assert find_mentions(markdown, "x") == [(6, "> [[b]] x")]
    expected = "\xa0\n\u3000\n[[A]]\n\n> \xa0\n> [[B]] x\n\n\u2028\n[[C]]\n===\n"
    assert rewrite_links(markdown, {0: "A", 1: "B", 2: "C"}) == expected


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_lines_with_any_line_ending(newline: str) -> None:
    markdown = newline.join(["# T", "", "[[a]]", "text", "- [[b]]", "", "> [[c]]", ""])
    assert lines(markdown) == [("a", 3), ("b", 5), ("c", 7)]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet="ab \n\r", max_size=60),
    st.lists(st.integers(min_value=0, max_value=60), max_size=12),
)
def test_line_and_its_text_of_any_offset_in_any_order(text: str, offsets: list[int]) -> None:
    # The line of each offset asked, in any order, is where the line starts put it, and
    # its text is that line's.
    found = links.Scan(text)
    starts = [0, *(m.end() for m in re.finditer(r"\r\n?|\n", text))]
    lines = re.split(r"\r\n?|\n", text)
    for offset in offsets:
        assert found.line(offset) == bisect_right(starts, offset)
        if offset < len(text) and text[offset] not in "\r\n":
            assert found.line_at(offset) == lines[found.line(offset) - 1]


# --- rewrite_links ------------------------------------------------------------------------


def test_rewrite_keeps_embed_alias_and_fragment() -> None:
    markdown = "![[old]] [[old|Alias]] [[old#Heading|A]] [[old^blk]] [[old#^blk]]"
    # `[[old^blk]]` names a page `old^blk` (only `#` starts a fragment): its target is all
    expected = "![[new]] [[new|Alias]] [[new#Heading|A]] [[new]] [[new#^blk]]"

    assert rewrite_links(markdown, dict.fromkeys(range(5), "new")) == expected


def test_rewrite_only_the_selected_identical_link() -> None:
    markdown = "Both [[a]] and [[a]] here.\n"
    assert rewrite_links(markdown, {1: "b"}) == "Both [[a]] and [[b]] here.\n"
    assert rewrite_links(markdown, {0: "b"}) == "Both [[b]] and [[a]] here.\n"


def test_rewrite_skips_code_and_escaped_copies_of_the_link() -> None:
    markdown = "`[[a]]` \\[[a]] [[a]]\n``[[a]]`` [[a]]\n"
    expected = "`[[a]]` \\[[a]] [[b]]\n``[[a]]`` [[c]]\n"
    assert rewrite_links(markdown, {0: "b", 1: "c"}) == expected


def test_rewrite_after_multiline_code_span() -> None:
    markdown = "`x\n[[a]]` [[a]]\n"
    assert rewrite_links(markdown, {0: "b"}) == "`x\n[[a]]` [[b]]\n"


def test_rewrite_in_table_keeps_escaped_pipe() -> None:
    markdown = "| a | b |\r\n|---|---|\r\n| `[[p\\|x]]` | [[p\\|x]] and [[p\\|x]] |\r\n"
    expected = "| a | b |\r\n|---|---|\r\n| `[[p\\|x]]` | [[p\\|x]] and [[q\\|x]] |\r\n"
    assert rewrite_links(markdown, {1: "q"}) == expected


def test_rewrite_preserves_every_other_byte() -> None:
    markdown = (
        "---\r\n"
        "title: [[a]] in front matter\r\n"
        "---\r\n"
        "# Heading [[a]] ##\r\n"
        "\r\n"
        "Text\twith tab  [[ a | Alias ]]   trailing   \r\n"
        "   continued ![[a#Part]]\r\n"
        "\r\n"
        "- item\r\n"
        "\t  [[a]] after a tab\r\n"
        "> quote [[a]]\r\n"
        "lazy [[a]]\r\n"
        "\r\n"
        "```\r\n"
        "[[a]] in code\r\n"
        "```\r\n"
        "    [[a]] indented code\r\n"
        "\r\n"
        "| x | y |\r\n"
        "|---|---|\r\n"
        "| [[a\\|b]] | ![[a]] |\r\n"
        "![alt [[a]]](a.png)\r\n"
        "no newline at end [[a]]"
    )
    found = extract_links(markdown)
    assert [link.target for link in found if not link.markdown] == ["a"] * 11
    chosen = [i for i, link in enumerate(found) if not link.markdown]
    result = rewrite_links(markdown, dict.fromkeys(chosen, "New Name"))
    expected = (
        markdown.replace("[[a]]", "[[New Name]]")
        .replace("[[ a |", "[[ New Name |")
        .replace("[[a#", "[[New Name#")
        .replace("[[a\\|", "[[New Name\\|")
        .replace("[[New Name]] in code", "[[a]] in code")
        .replace("[[New Name]] indented", "[[a]] indented")
    )
    assert result == expected
    assert targets(result) == ["New Name"] * 11
    assert [link.line for link in extract_links(result)] == [link.line for link in found]


def test_rewrite_nothing_returns_the_same_text() -> None:
    markdown = "x [[a]]\r\ny\n"
    assert rewrite_links(markdown, {}) is markdown
    assert rewrite_links(markdown, {0: "a"}) == markdown


def test_rewrite_same_page_link_inserts_a_target() -> None:
    assert rewrite_links("[[#Heading|h]]", {0: "Other"}) == "[[Other#Heading|h]]"


def test_rewrite_rejects_bad_index_and_target() -> None:
    with pytest.raises(IndexError):
        rewrite_links("[[a]]", {1: "b"})
    with pytest.raises(IndexError):
        rewrite_links("no links", {0: "b"})
    for bad in ("", "  ", "a|b", "a]]", "a\nb", "a#b", "[[b"):
        with pytest.raises(ValueError):
            rewrite_links("[[a]]", {0: bad})


def test_rewrite_line_with_nul_character() -> None:
    assert rewrite_links("x\0 [[a]]\n", {0: "b"}) == "x\0 [[b]]\n"


_PIECES = [
    "[[a]]", "[[a|x]]", "![[a#h]]", "[[ a ^b ]]", "[[a\\|y]]", "`", "``", "\\", "[", "]", "!",
    " ", "  ", "\t", "\n", "\r\n", "\n\n", "\n    ", "\n> ", "\n- ", "\n# ", "\n```\n",
    "\n~~~\n", "| ", " |", "\n|---|---|\n", "<b>", "<!--", "-->", "(", ")", "*", "_", "x", "y",
    "\xa0", "\u3000", "\n===\n", "](u)", "<http://a/[[a]]>",
]  # fmt: skip


def test_rewrite_fuzz_keeps_structure() -> None:
    rng = random.Random(1234)
    for _ in range(400):
        markdown = "".join(rng.choices(_PIECES, k=rng.randint(1, 40)))
        found = extract_links(markdown)
        assert rewrite_links(markdown, {i: f.target for i, f in enumerate(found)}) == markdown
        chosen = {i: "Zed" for i, f in enumerate(found) if not f.markdown and rng.random() < 0.5}
        result = rewrite_links(markdown, chosen)
        again = [link for link in extract_links(result) if not link.markdown]
        expected = [
            ("Zed" if i in chosen else f.target, f.alias, f.fragment, f.embed, f.line)
            for i, f in enumerate(found)
            if not f.markdown
        ]
        assert [written(link) for link in again] == expected, markdown
        assert result.count("\n") == markdown.count("\n")


def test_parser_is_shared_safely_between_threads() -> None:
    docs = [f"# {n}\n\n" + "".join(f"- [[p{n}-{i}]]\n" for i in range(n)) for n in range(40)]
    expected = [targets(doc) for doc in docs]
    with ThreadPoolExecutor(max_workers=8) as pool:
        assert list(pool.map(targets, docs * 5)) == expected * 5


# --- find_mentions ------------------------------------------------------------------------


def test_mentions_respect_word_boundaries() -> None:
    markdown = (
        "the graph is here\n"
        "Graph.\n"
        "graphs and paragraph\n"
        "GRAPH, again\n"
        "a _graph_ and **graph**\n"
        "sub-graph (graph)\n"
        "graph_db is one word? no: underscores are Markdown\n"
        "graph2 and 2graph\n"
    )
    assert [n for n, _ in find_mentions(markdown, "Graph")] == [1, 2, 4, 5, 6, 7]


def test_mentions_return_full_lines_once_each() -> None:
    markdown = "graph graph graph\r\nnothing\r\n  indented graph text  \r\n"
    expected = [(1, "graph graph graph"), (3, "  indented graph text  ")]
    assert find_mentions(markdown, "graph") == expected


def test_mentions_skip_code_links_and_html() -> None:
    markdown = (
        "`graph` in code\n"
        "[[Graph]] linked\n"
        "[[Other|graph]] aliased\n"
        "```\ngraph\n```\n"
        "\n    graph indented\n\n"
        '<span title="graph">x</span> <https://graph.org>\n'
        "~~~\ngraph\n~~~\n"
        "real graph\n"
    )
    assert find_mentions(markdown, "graph") == [(14, "real graph")]


def test_mentions_in_structures_have_right_lines() -> None:
    markdown = "# Graph\n\n- a\n- the graph\n\n> quoted\n> graph\n\n| x |\n|---|\n| graph |\n"
    assert [n for n, _ in find_mentions(markdown, "graph")] == [1, 4, 7, 11]


def test_mentions_cjk_and_mixed_scripts() -> None:
    assert find_mentions("長期記憶の話", "記憶") == [(1, "長期記憶の話")]
    assert find_mentions("Pythonの話\nCPython", "python") == [(1, "Pythonの話")]
    assert find_mentions("기억은 중요하다", "기억") == [(1, "기억은 중요하다")]


def test_mentions_multiword_and_special_phrases() -> None:
    markdown = "a knowledge   graph here\nknowledge\ngraph split\nC++ rocks, C+++ too\n"
    assert [n for n, _ in find_mentions(markdown, "knowledge graph")] == [1, 2]
    assert [n for n, _ in find_mentions(markdown, "C++")] == [4]


def test_mentions_empty_or_absent_phrase() -> None:
    assert find_mentions("anything", "") == []
    assert find_mentions("anything", "   ") == []
    assert find_mentions("anything", "missing") == []
    assert find_mentions("", "x") == []


# --- line_text ----------------------------------------------------------------------------


def test_line_text() -> None:
    markdown = "one\r\ntwo\nthree\rfour"
    assert [line_text(markdown, n) for n in range(6)] == ["", "one", "two", "three", "four", ""]
    assert line_text("a\n", 2) == ""
    assert line_text("", 1) == ""
    assert line_text("a", -1) == ""


# -- the fast path for pages without code, HTML, escapes or tables ----------------------

_PLAIN_PIECES = st.sampled_from(
    [
        "[[",
        "]]",
        "[",
        "]",
        "!",
        "|",
        "#",
        "^",
        "x",
        "Page",
        " ",
        "  ",
        "\n",
        "\n\n",
        "\r\n",
        "- ",
        "> ",
        "1. ",
        "# ",
        "---",
        "===",
        "*",
        "_",
        "(",
        ")",
        ":",
        "-",
        ".md",
        "\x00",
        "記憶",
        "\u00a0",
        "\u3000",
        "\r",
        "| a | b |\n",
        "|---|---|\n",
        "---|---\n",
        "| ",
        " |",
    ]
)


def _parsed_links(markdown: str) -> list[Link]:
    """The links found with markdown-it's block structure, without the line scan."""
    return links.full_scan(markdown).links


def _scanned_links(markdown: str) -> list[Link] | None:
    """The links the line scan finds; None when it leaves the page to markdown-it."""
    page = links.line_scan(markdown)
    return None if page is None else page.links


def check_line_scan(markdown: str) -> None:
    """The line scan, where it answers, finds what markdown-it's structure gives (to
    the character), and so does `extract_links`."""
    full = _parsed_links(markdown)
    fast = _scanned_links(markdown)
    assert fast is None or fast == full
    assert extract_links(markdown) == full


@settings(max_examples=300, deadline=None)
@given(st.lists(_PLAIN_PIECES, max_size=40).map("".join))
def test_fast_path_finds_what_markdown_it_finds(markdown: str) -> None:
    check_line_scan(markdown)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(_PLAIN_PIECES, max_size=40).map("".join))
def test_fast_path_finds_what_markdown_it_finds_many(markdown: str) -> None:
    check_line_scan(markdown)


def test_plain_pages_take_the_line_scan() -> None:
    markdown = "# Title\n\nNo links [here] at all. ![img](x.png) [[a]]\n" * 50
    assert _scanned_links(markdown) == _parsed_links(markdown)
    assert len(wiki(markdown)) == 50


@pytest.mark.parametrize(
    "markdown",
    [
        "| a | b |\n|---|---|\n| [[page|alias]] | x |\n",
        "| a | b |\n| :-- | --: |\n| [[page|alias]] | x |\n",
        "para\n\n    [[indented]]\n",
        "para\n\n\t[[tab indented]]\n",
        "-     [[indented in a list item]]\n",
        ">     [[indented in a quote]]\n",
        "<div>\n[[html block]]\n</div>\n",
        "<span title='[[inline html]]'>x</span>",
        "<http://example.com/[[autolink]]>",
        "\\[[escaped]]",
        "[text]([[destination]])",
    ],
)
def test_pages_with_code_or_markup_read_as_markdown_it_reads_them(markdown: str) -> None:
    check_line_scan(markdown)


# -- the fast path for pages whose only code is fences and one-line code spans -------------

_CODE_PIECES = st.sampled_from(
    [
        "`",
        "``",
        "```",
        "~~~",
        "````",
        "```py\n",
        "\n```\n",
        "\n~~~\n",
        "\n~~~~ x\n",
        "   ```",
        " ```",
        "\t```",
        "```\t",
        "``` `x`\n",
        "`[[x]]`",
        "[[a`b]]",
        "[[ |`a]]",
        "``[[x]]`",
        "    ",
        "\t",
        "<b>",
        "\\",
        "](x)",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PLAIN_PIECES, _CODE_PIECES), max_size=40).map("".join))
def test_code_aware_path_finds_what_markdown_it_finds(markdown: str) -> None:
    check_line_scan(markdown)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(st.lists(st.one_of(_PLAIN_PIECES, _CODE_PIECES), max_size=40).map("".join))
def test_code_aware_path_finds_what_markdown_it_finds_many(markdown: str) -> None:
    check_line_scan(markdown)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("# T\n\n```python\nx = '[[no]]'\n```\n\n[[Yes]] and `[[no]]`.\n", [("Yes", 7)]),
        ("```\n[[no]]\n  ```\n[[yes]] ``a ` b`` [[also]]\n", [("yes", 4), ("also", 4)]),
        ("- item `code` [[a]]\n> quote [[b]] `[[c]]`\n", [("a", 1), ("b", 2)]),
        ("text `[[code]]` text", []),
        ("```\n[[fenced]]\n```\n", []),
        ("no links at all, `code` and\n```\nfence\n```\n", []),
    ],
)
def test_code_aware_path_takes_common_pages(markdown: str, expected: list[tuple[str, int]]) -> None:
    scanned = _scanned_links(markdown)
    assert scanned is not None
    assert [(link.target, link.line) for link in scanned] == expected
    assert scanned == _parsed_links(markdown)


@pytest.mark.parametrize(
    ("markdown", "expected"),
    [
        ("~~~\n[[no]]\n~~~~\n[[yes]]\n", [("yes", 4)]),
        ("```\n[[no]]\n", []),  # an unclosed fence runs to the end
        ("~~~\n[[fenced]]\n~~~\n", []),
    ],
)
def test_tilde_and_unclosed_fences(markdown: str, expected: list[tuple[str, int]]) -> None:
    assert lines(markdown) == expected
    check_line_scan(markdown)


@pytest.mark.parametrize(
    "markdown",
    [
        "a `span that\ncloses` on the next line [[x]]",  # may close later: the parser decides
        "- ```\n  [[in a list fence]]\n  ```\n",
        "> ```\n> [[in a quoted fence]]\n> ```\n",
        "  ```\n[[indented fence]]\n```\n",
        "```\n<div>\n```\n\n    [[indented code]]\n",
        "```a|b\n|---|---|\n[[a table, not a fence]]\n",
        "<div>\n~~~\n\n[[after an HTML block]]\n~~~\n",
    ],
)
def test_code_aware_path_leaves_the_rest_to_the_parser(markdown: str) -> None:
    assert _scanned_links(markdown) is None
    assert extract_links(markdown) == _parsed_links(markdown)
