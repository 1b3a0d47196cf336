"""Links and properties as Obsidian reads them: one parser, aliases, Markdown links,
dotted names, tables, and renames that keep every link's meaning."""

from __future__ import annotations

import posixpath
import random
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import write
from helpers import assert_matches_fresh, placeholder_slugs
from lore_mcp import links, rewrites, vault_ops
from lore_mcp.errors import LooseNameError
from lore_mcp.markdown import parsed_regions, simple_regions
from lore_mcp.vault_ops import AppState


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(".lore")
    }


def resolved(opened: AppState, name: str) -> dict[str, str]:
    return {link.target: link.slug for link in vault_ops.read_page(opened, name).links}


# -- the reported cases -------------------------------------------------------------------------


def test_a_rename_rewrites_the_links_the_index_found_in_a_one_column_table(vault_dir: Path) -> None:
    write(vault_dir, "Board.md", "| Status\n---\nOwner [[Alice|A]]\n[[Bob]]\n")
    write(vault_dir, "Board 2.md", "Status |\n---\nOwner [[Alice|A]]\n")
    write(vault_dir, "Alice.md", "alice\n")
    write(vault_dir, "Bob.md", "bob\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        assert resolved(opened, "Board") == {"Alice": "alice", "Bob": "bob"}
        renamed = vault_ops.rename_page(opened, "Alice", "Alicia")
        assert renamed.links_rewritten == 2
        assert (
            vault_dir / "Board.md"
        ).read_text() == "| Status\n---\nOwner [[Alicia|A]]\n[[Bob]]\n"
        assert (vault_dir / "Board 2.md").read_text() == "Status |\n---\nOwner [[Alicia|A]]\n"
        assert_matches_fresh(opened)
    finally:
        opened.close()


def test_dotted_names_are_pages_and_known_extensions_attachments(vault_dir: Path) -> None:
    for name in ("Node.js", "ASP.NET", "Dr.Who", "v1.10"):
        write(vault_dir, f"{name}.md", f"{name}\n")
    write(vault_dir, "data.csv", "a,b\n")
    write(
        vault_dir,
        "Stack.md",
        "[[Node.js]] [[ASP.NET]] [[Dr.Who]] [[v1.10]] ![[chart.png]] [[data.csv]] [[Plan.pdf]]\n",
    )
    opened = vault_ops.open_vault(vault_dir)
    try:
        assert resolved(opened, "Stack") == {
            "Node.js": "node.js",
            "ASP.NET": "asp.net",
            "Dr.Who": "dr.who",
            "v1.10": "v1.10",
        }
        assert [b.slug for b in vault_ops.get_backlinks(opened, "Node.js").linked] == ["stack"]
        vault_ops.rename_page(opened, "Node.js", "Deno")
        assert (vault_dir / "Stack.md").read_text().startswith("[[Deno]] [[ASP.NET]]")
        assert not placeholder_slugs(opened)  # no placeholder for the png, the pdf or the csv
    finally:
        opened.close()


def test_markdown_links_are_links_and_keep_their_form_on_rename(vault_dir: Path) -> None:
    write(vault_dir, "Project Plan.md", "plan\n")
    write(vault_dir, "notes/Idea.md", "idea\n")
    guide = "[plan](Project%20Plan.md), [idea](../notes/Idea.md#Why) [raw](<../Project Plan.md>) [web](https://x.org/a.md)\n"
    write(vault_dir, "docs/Guide.md", guide)
    opened = vault_ops.open_vault(vault_dir)
    try:
        assert resolved(opened, "Guide") == {
            "Project Plan.md": "project-plan",
            "../notes/Idea.md": "notes/idea",
            "../Project Plan.md": "project-plan",
        }
        vault_ops.rename_page(opened, "Project Plan", "Master Plan")
        vault_ops.rename_page(opened, "notes/Idea", "ideas/Big Idea")
        assert (vault_dir / "docs/Guide.md").read_text() == (
            "[plan](Master%20Plan.md), [idea](../ideas/Big%20Idea.md#Why) "
            "[raw](<../Master Plan.md>) [web](https://x.org/a.md)\n"
        )
        assert_matches_fresh(opened)
    finally:
        opened.close()


def test_frontmatter_is_properties_not_text(vault_dir: Path) -> None:
    write(
        vault_dir,
        "Help.md",
        "---\naliases: [Assistance, Support page]\ntags: [help, docs]\ndate: 2024-01-02\n---\n"
        "Help body, see #inline.\n",
    )
    write(vault_dir, "Asker.md", "Ask for [[Assistance]]. The support page is useful.\n")
    write(vault_dir, "Broken.md", "---\naliases: [unclosed\n---\nbody\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        page = vault_ops.read_page(opened, "Help")
        assert page.aliases == ["Assistance", "Support page"]
        assert page.properties["date"] == "2024-01-02"
        assert set(page.tags) == {"help", "docs", "inline"}
        assert page.content.startswith("---\naliases:")  # the file as it is
        # an alias is a name to find the page by, never a link target (Obsidian's rule)
        assert resolved(opened, "Asker") == {"Assistance": "assistance"}
        [link] = vault_ops.read_page(opened, "Asker").links
        assert link.note is not None and link.note.endswith("write [[Help|Assistance]]")
        assert vault_ops.read_page(opened, "Support page").path == "Help.md"  # a read by alias
        assert vault_ops.read_page(opened, "Support page").matched_by == "alias"
        assert "help" in [m.slug for m in vault_ops.search_titles(opened, "assist").matches]

        mentions = vault_ops.get_backlinks(opened, "Help", include_unlinked=True).unlinked
        assert [(m.slug, m.line) for m in mentions or []] == [("asker", 1)]
        assert vault_ops.search(opened, "aliases").hits == []  # frontmatter is not searched
        assert [h.slug for h in vault_ops.search(opened, "#docs").hits] == ["help"]
        assert [f.path for f in vault_ops.doctor(opened).broken_properties] == ["Broken.md"]
    finally:
        opened.close()


def test_an_alias_never_takes_a_link_and_a_write_by_it_is_refused(vault_dir: Path) -> None:
    write(vault_dir, "Asker.md", "See [[Helpdesk]].\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        assert "helpdesk" in placeholder_slugs(opened)
        saved = vault_ops.save_page(opened, "Support", "---\naliases: Helpdesk\n---\nwe help\n")
        assert resolved(opened, "Asker") == {"Helpdesk": "helpdesk"}  # still a placeholder
        assert "helpdesk" in placeholder_slugs(opened)
        assert saved.path == "Support.md"
        note = vault_ops.read_page(opened, "Asker").links[0].note
        assert note is not None and "[[Support|Helpdesk]]" in note
        assert vault_ops.read_page(opened, "Helpdesk").path == "Support.md"  # a read by alias
        with pytest.raises(LooseNameError, match="'Support'"):  # a write by it is refused
            vault_ops.save_page(opened, "Helpdesk", "x\n", mode="append")

        assert_matches_fresh(opened)
    finally:
        opened.close()


def test_renames_that_keep_the_slug_still_rewrite_names_that_no_longer_match(
    vault_dir: Path,
) -> None:
    write(vault_dir, "Project_Alpha.md", "alpha\n")
    write(vault_dir, "Team.md", "[[Project_Alpha]] and [[project_alpha|the project]]\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        renamed = vault_ops.rename_page(opened, "Project_Alpha", "Project Alpha")
        assert renamed.links_rewritten == 2
        assert (
            vault_dir / "Team.md"
        ).read_text() == "[[Project Alpha]] and [[Project Alpha|the project]]\n"

    finally:
        opened.close()


def test_a_move_keeps_what_every_link_meant(vault_dir: Path) -> None:
    write(vault_dir, "a/P.md", "[[./Q]] and [[Security]]\n")
    write(vault_dir, "a/Q.md", "q\n")
    write(vault_dir, "a/Security.md", "a's\n")
    write(vault_dir, "b/Security.md", "b's\n")
    write(vault_dir, "User interface/Settings.md", "ui\n")
    write(vault_dir, "Help and support.md", "hs\n")
    write(vault_dir, "Users.md", "[[Settings]] and [[Help and support]]\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.rename_page(opened, "a/P", "b/P")
        assert (vault_dir / "b/P.md").read_text() == "[[../a/Q]] and [[a/Security]]\n"
        assert resolved(opened, "b/P") == {"../a/Q": "a/q", "a/Security": "a/security"}
        renamed = vault_ops.rename_page(opened, "Help and support", "Settings")
        assert renamed.links_rewritten == 2
        assert (
            vault_dir / "Users.md"
        ).read_text() == "[[User interface/Settings]] and [[Settings]]\n"
        assert_matches_fresh(opened)
    finally:
        opened.close()


def test_a_page_appearing_where_a_link_waited_is_reported_not_rewritten(vault_dir: Path) -> None:
    write(vault_dir, "Old.md", "old\n")
    write(vault_dir, "Waiting.md", "[[New Name]]\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        renamed = vault_ops.rename_page(opened, "Old", "New Name")
        assert [(r.source, r.before, r.after) for r in renamed.retargeted] == [
            ("waiting", "new-name", "new-name")
        ] or renamed.retargeted == []
        assert resolved(opened, "Waiting") == {"New Name": "new-name"}
    finally:
        opened.close()


def test_an_unescaped_pipe_in_a_table_cell_is_an_alias(vault_dir: Path) -> None:
    write(vault_dir, "zh/版本历史.md", "历史\n")
    write(
        vault_dir,
        "zh/同步.md",
        "| 功能 |\n|---|\n| [[版本历史|同步版本历史]] |\n| [[版本历史\\|历史]] |\n",
    )
    opened = vault_ops.open_vault(vault_dir)
    try:
        assert [(k.target, k.slug) for k in vault_ops.read_page(opened, "同步").links] == [
            ("版本历史", "zh/版本历史"),
            ("版本历史", "zh/版本历史"),
        ]
        vault_ops.rename_page(opened, "版本历史", "版本记录")
        assert (vault_dir / "zh/同步.md").read_text() == (
            "| 功能 |\n|---|\n| [[版本记录|同步版本历史]] |\n| [[版本记录\\|历史]] |\n"
        )
    finally:
        opened.close()


# -- one parser ----------------------------------------------------------------------------------

PIECES = [
    "[[a]]",
    "[[b|c]]",
    "[[d#e]]",
    "![[f]]",
    "[t](u.md)",
    "![i](p.png)",
    "[x]([[y]])",
    "`",
    "``",
    "\n",
    "\n\n",
    "> ",
    "- ",
    "1. ",
    "    ",
    "```\n",
    "\n```\n",
    "~~~\n",
    "\\",
    "[",
    "]",
    "(",
    ")",
    "x",
    " ",
    "|",
    "<b>",
    "<",
    "](",
    "# ",
    "#tag ",
    "| a | b |\n|---|---|\n",
    "| [[g|h]] |\n",
    "\t",
    "\r\n",
    "[[n [[o]] ]]",
    "[l [[m]]](k.md)",
    "<!-- [[z]] -->",
]


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_the_line_scan_is_the_full_parse_where_it_answers(text: str) -> None:
    fast, full = links.scan(text), links.scan(text, full=True)
    assert fast.links == full.links
    assert fast.tags == full.tags
    if simple_regions(text) is None:
        assert fast.regions == parsed_regions(text)
    # Rewriting uses the very spans indexing found: each replaces exactly its target.
    for link in full.links:
        assert text[link.start : link.end] == (
            link.target if not link.markdown else text[link.start : link.end]
        )


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=25).map("".join))
def test_rewriting_every_link_changes_only_targets(text: str) -> None:
    found = [link for link in links.extract_links(text) if not link.markdown and link.target]
    changed = rewrites.rewrite_links(
        text, {i: "Renamed" for i, link in enumerate(links.extract_links(text)) if link in found}
    )
    again = [link for link in links.extract_links(changed) if not link.markdown and link.target]
    assert len(again) == len(found)
    assert all(link.target == "Renamed" for link in again)
    assert [(k.alias, k.fragment, k.embed) for k in again] == [
        (k.alias, k.fragment, k.embed) for k in found
    ]


# -- a vault in the shape of a real one ----------------------------------------------------------

LANGUAGES = {
    "en": ["Getting started", "Internal links", "Aliases", "Tags", "Settings", "Sync", "Canvas"],
    "de": ["Erste Schritte", "Interne Links", "Aliase", "Einstellungen", "Synchronisierung"],
    "zh": ["入门", "内部链接", "别名", "设置", "同步"],
    "ja": ["はじめに", "内部リンク", "エイリアス", "設定"],
}


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def obsidian_resolve(target: str, source: str, files: list[str]) -> str | None:
    """Obsidian's rules as observed on 1.13, written out on their own: the page file a
    link target means, or None (unresolved). Paths and names match ignoring case; an
    exact path wins, then a file in the linking page's own folder, then the shortest
    path, then sort order. An alias never resolves a link."""
    text = target.replace("\\", "/").strip()
    while _fold(text).endswith(".md"):
        text = text[:-3]

    def at(path: str) -> str | None:
        """The file at this path; of several only case or Unicode form tell apart, the
        one spelled as the link is, else the first."""
        found = sorted(f for f in files if _fold(f[:-3]) == _fold(path))
        same = [f for f in found if f[:-3] == path] or [
            f for f in found if unicodedata.normalize("NFC", f[:-3]) == _nfc(path)
        ]
        return (same or found)[0] if found else None

    if text.startswith(("./", "../")):
        return at(posixpath.normpath(posixpath.join(posixpath.dirname(source), text)))
    if text.startswith("/"):
        return at(text[1:])
    if (exact := at(text)) is not None:
        return exact
    ending = [f for f in files if _fold(f[:-3]).endswith("/" + _fold(text))]
    if len(ending) > 1:
        here = [f for f in ending if posixpath.dirname(f) == posixpath.dirname(source)]
        ending = sorted(here) or sorted(ending, key=lambda f: (len(f), f))
    return ending[0] if ending else None


def _realistic_vault(root: Path) -> None:
    rng = random.Random(21)
    titles = [(lang, title) for lang, names in LANGUAGES.items() for title in names]
    write(root, "Home.md", "# Home\n" + "".join(f"- [[{lang}/{t}|{t}]]\n" for lang, t in titles))
    write(root, "assets/diagram.png", "png")
    write(root, "assets/manual.pdf", "pdf")
    for lang, title in titles:
        others = rng.sample(titles, 4)
        alias = f"{title} ({lang})"
        body = [
            "---",
            f"aliases: [{alias!r}]" if rng.random() < 0.8 else "title: none",
            f"tags: [{lang}, help]",
            "---",
            f"# {title}",
            "",
            f"See [[{others[0][1]}]] and [[{others[1][1]}|this]]; ![[diagram.png]]",
            f"Also [{others[2][1]}]({others[2][1].replace(' ', '%20')}.md) and "
            f"[[{others[3][0]}/{others[3][1]}#Top]].",
            "",
            "| Page | Note |",
            "|---|---|",
            f"| [[{others[0][1]}\\|x]] | [[../{others[1][0]}/{others[1][1]}]] |",
            "",
            "```",
            f"[[{others[2][1]}]] is code",
            "```",
            f"By alias: [[{others[3][1]} ({others[3][0]})]] and [[Settings]] and [[Missing page]].",
        ]
        write(root, f"{lang}/{title}.md", "\n".join(body) + "\n")
    write(root, "Settings.md", "# Settings at the top\n[[Home]]\n")


def test_every_link_resolves_as_obsidian_resolves_it(vault_dir: Path) -> None:
    _realistic_vault(vault_dir)
    opened = vault_ops.open_vault(vault_dir)
    try:
        files = sorted(p for p in tree(vault_dir) if p.endswith(".md"))
        checked = 0
        for rel in files:
            for link in links.extract_links((vault_dir / rel).read_text()):
                if (
                    link.is_same_page
                    or link.is_attachment
                    or link.target.endswith((".png", ".pdf"))
                ):
                    continue
                expected = obsidian_resolve(link.target, rel, files)
                ours = {k.target: k for k in vault_ops.read_page(opened, "/" + rel).links}[
                    link.target
                ]
                followed = ours.exists and not ours.loose  # as Obsidian would follow it
                assert followed == (expected is not None), (rel, link.target)
                if expected is not None:
                    assert ours.slug == opened.handle(expected), (rel, link.target)
                checked += 1

        assert checked > 100
    finally:
        opened.close()


@pytest.mark.slow
def test_renaming_the_most_linked_pages_and_back_restores_every_byte(vault_dir: Path) -> None:
    _realistic_vault(vault_dir)
    before = tree(vault_dir)
    opened = vault_ops.open_vault(vault_dir)
    try:
        shape = vault_ops.get_graph(opened).shape
        assert shape is not None
        for linked in shape.most_linked[:5]:
            page = vault_ops.read_page(opened, linked.slug)
            assert page.path is not None
            folder, _, stem = page.path[:-3].rpartition("/")
            vault_ops.rename_page(
                opened, "/" + page.path, f"{folder}/Elsewhere/{stem} renamed".lstrip("/")
            )
            vault_ops.rename_page(
                opened, f"{folder}/Elsewhere/{stem} renamed".lstrip("/"), "/" + page.path[:-3]
            )
            assert tree(vault_dir) == before, f"renaming {page.path} and back changed the tree"
        assert_matches_fresh(opened)
    finally:
        opened.close()
