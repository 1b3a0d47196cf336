"""A page's Markdown as HTML, with its links made links of the UI.

markdown-it-py renders CommonMark and tables; an inline rule of this module reads
`[[wiki links]]` and `![[embeds]]` (code spans and fences stay text, as markdown-it
leaves them). Each wiki or Markdown link to a page becomes a link to that page's view,
resolved as the engine resolved it when it indexed the page (the page's `links`), so
the UI shows what the tools see: a placeholder, a loose link (one Obsidian will not
follow) and an ambiguous one each get a class and a note. Embedded images are shown
from the vault; raw HTML in a page is shown as text, never run.
"""

from __future__ import annotations

import html
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import SplitResult, quote, unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token
from markdown_it.utils import EnvType, OptionsDict

from lore_mcp.links import ATTACHMENTS
from lore_mcp.models import OutgoingLink

INTO = "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}"  # between a page and its heading
IMAGES = frozenset({"avif", "bmp", "gif", "jpeg", "jpg", "png", "svg", "webp"})


def page_url(slug: str) -> str:
    return "/page/" + quote(slug, safe="/")


def file_url(path: str) -> str:
    return "/file/" + quote(path, safe="/")


@dataclass(frozen=True, slots=True)
class Context:
    """What the rendering of one page knows: its file's folder, its links as the engine
    resolved them (by target as written), and how to find an attachment's file."""

    folder: str
    links: dict[str, OutgoingLink]
    find_file: Callable[[str, str], str | None]  # (folder, target) -> vault path


def context(
    path: str | None, links: Sequence[OutgoingLink], find_file: Callable[[str, str], str | None]
) -> Context:
    by_target: dict[str, OutgoingLink] = {}
    for link in links:
        by_target.setdefault(link.target, link)
        by_target.setdefault(unquote(link.target), link)
    return Context(posixpath.dirname(path or ""), by_target, find_file)


def render(text: str, ctx: Context) -> str:
    """The HTML of the page body `text` (frontmatter already taken off)."""
    return str(_md().render(text, {"lore": ctx}))


@cache
def _md() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.inline.ruler.before("link", "wikilink", _wiki_rule)
    md.add_render_rule("wikilink", _render_wiki)
    md.add_render_rule("link_open", _render_link_open)
    md.add_render_rule("image", _render_image)
    return md


def _wiki_rule(state: StateInline, silent: bool) -> bool:
    src, pos = state.src, state.pos
    embed = src.startswith("![[", pos)
    if not embed and not src.startswith("[[", pos):
        return False
    start = pos + (3 if embed else 2)
    end = src.find("]]", start)
    inner = src[start:end] if end >= 0 else ""
    if not inner.strip() or any(ch in inner for ch in "[]\n\r"):
        return False
    if not silent:
        token = state.push("wikilink", "", 0)
        token.meta = {"inner": inner.replace("\\|", "|"), "embed": embed}
    state.pos = end + 2
    return True


def _lore(env: EnvType) -> Context:
    ctx = env["lore"]
    assert isinstance(ctx, Context)
    return ctx


def _render_wiki(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    meta: dict[str, Any] = tokens[idx].meta
    inner: str = meta["inner"]
    target_part, _, alias = inner.partition("|")
    target, _, fragment = target_part.partition("#")
    target = target.strip()
    shown = f"{target} {INTO} {fragment.lstrip('^')}" if fragment else target_part
    label = alias.strip() or shown.strip()
    ctx = _lore(env)
    if not target:  # [[#heading]]: a place in this page
        label = alias.strip() or fragment.lstrip("^")
        return f'<a class="wiki" href="#{html.escape(quote(fragment))}">{html.escape(label)}</a>'
    extension = target.rpartition(".")[2].lower() if "." in target else ""
    link = ctx.links.get(target)
    if link is None and extension in ATTACHMENTS:
        return _attachment(ctx, target, label, meta["embed"] and extension in IMAGES)
    if link is None:  # written where the engine reads no links (it cannot be one)
        return html.escape(f"{'!' if meta['embed'] else ''}[[{inner}]]")
    anchor = f"#{quote(fragment)}" if fragment and not fragment.startswith("^") else ""
    return _page_link(link, anchor) + html.escape(label) + "</a>"


def _page_link(link: OutgoingLink, anchor: str = "") -> str:
    classes = ["wiki"]
    notes = []
    if not link.exists:
        classes.append("placeholder")
        notes.append("a placeholder: no page has this name yet")
    if link.loose:
        classes.append("loose")
        notes.append(link.note or "a loose link: Obsidian will not follow it")
    if link.ambiguous:
        classes.append("ambiguous")
        notes.append(link.note or "ambiguous: several pages have this name")
    title = f' title="{html.escape("; ".join(notes))}"' if notes else ""
    href = html.escape(page_url(link.slug) + anchor)
    return (
        f'<a class="{" ".join(classes)}" href="{href}" data-slug="{html.escape(link.slug)}"{title}>'
    )


def _attachment(ctx: Context, target: str, label: str, image: bool) -> str:
    found = ctx.find_file(ctx.folder, target)
    if found is None:
        return f'<span class="missing" title="no such file">{html.escape(label)}</span>'
    url = html.escape(file_url(found))
    if image:
        return f'<img src="{url}" alt="{html.escape(label)}">'
    return f'<a class="attachment" href="{url}">{html.escape(label)}</a>'


def _render_link_open(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    parts = urlsplit(str(token.attrGet("href") or ""))
    if (path := _in_vault(parts)) is not None:
        link = _lore(env).links.get(path)
        if link is not None:
            return _page_link(link, f"#{parts.fragment}" if parts.fragment else "")
    if parts.scheme in ("http", "https", "mailto"):
        token.attrSet("rel", "noopener noreferrer")
    return self.renderToken(tokens, idx, options, env)


def _render_image(
    self: RendererHTML, tokens: Sequence[Token], idx: int, options: OptionsDict, env: EnvType
) -> str:
    token = tokens[idx]
    if (path := _in_vault(urlsplit(str(token.attrGet("src") or "")))) is not None:
        ctx = _lore(env)
        found = ctx.find_file(ctx.folder, path)
        if found is not None:
            token.attrSet("src", file_url(found))
    return self.image(tokens, idx, options, env)


def _in_vault(parts: SplitResult) -> str | None:
    """The path a Markdown link or image names in the vault (no scheme, no host), as
    written there: None for one that leads elsewhere."""
    if parts.scheme or parts.netloc or not parts.path:
        return None
    return unquote(parts.path)
