"""Renaming and moving a page, and rewriting links so that they keep their meaning.

Every link that could lead elsewhere once the page moves is resolved twice, before and
after, the way Obsidian's own link update works: a link to the page is rewritten when
its text no longer names the page as written (same slug or not); a link to another
page that the move would capture, or the moved page's own relative links, are
rewritten to keep their target. A link that led nowhere and now leads to the page is
left, and listed as retargeted. Rewrites keep each link's form (relative, rooted or a
path tail; URL-encoded or in `<>`; alias, heading and `!` untouched).

Every file the rename changes is kept in the history first; then the moves and the new
bytes are written down (`journal`) before any file changes, so the rename happens as one.
"""

from __future__ import annotations

import posixpath
import unicodedata
from dataclasses import dataclass, field
from typing import NamedTuple

from lore_mcp import audit, links
from lore_mcp.errors import InvalidArgumentError, PageExistsError, VaultError
from lore_mcp.models import RenameResult, RetargetedLink
from lore_mcp.slugs import (
    Aliases,
    SlugSet,
    file_path_for,
    parse_name,
    resolve,
    slug_from_path,
    slugify,
    suffixes,
    target_key,
    title_from_path,
)
from lore_mcp.vault_ops import history, journal, names, sync
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import spelled_on_disk
from lore_mcp.vault_ops.open import writing
from lore_mcp.vault_ops.pages import check_expected, check_inside, read_bytes


def rename_page(
    vault: AppState,
    name: str,
    new_name: str,
    *,
    door: str = "api",
    expected_hash: str | None = None,
) -> RenameResult:
    """Move a page to a new title or `folder/New Title`, rewriting links so they keep
    their meaning. Kept in the history, recorded in the audit log."""
    with writing(vault):
        source = names.existing(vault, name)
        old_rel, old_slug = source.rel, source.slug
        new_rel = spelled_on_disk(vault.root, _new_path(old_rel, new_name))
        new_slug = slug_from_path(new_rel)
        if new_rel == old_rel:
            raise InvalidArgumentError(f"{name!r} is already called {new_name!r}.")
        check_inside(vault, new_rel)
        if new_slug != old_slug and (new_slug in vault.pages or (vault.root / new_rel).exists()):
            raise PageExistsError(
                f"A page named {new_slug!r} already exists. Pick another name, or merge the "
                "two pages with save_page and delete_page."
            )
        current = read_bytes(vault, old_rel)
        check_expected(old_rel, current, expected_hash)
        plan = _Rewrites(vault, old_slug, old_rel, new_rel) if source.indexed else None
        texts = plan.texts() if plan else {}
        moves = journal.Plan([(old_rel, new_rel)])
        for was, rewrite in texts.items():
            moves.writes[new_rel if was == old_rel else was] = rewrite.after
        before = {old_rel: current} | {rel: rewrite.before for rel, rewrite in texts.items()}
        kept = [history.keep(vault.root, was, before[was], "rename_page", door) for was in texts]
        vault.undo.record(vault.root, {new_rel: None, **before}, kept)
        try:
            journal.run(vault.root, moves)
        except VaultError:
            if not journal.pending(vault.root):  # nothing moved: the pages are as they were
                for version in kept:
                    history.discard(vault.root, version)
            raise
        applied = sync.sync_files(vault, moves.paths())
        others = {slug_from_path(rel): rel for rel in texts if rel != old_rel} if plan else {}
        audit.append(
            vault.root,
            audit.renamed(
                vault.root,
                door,
                old=(old_slug, old_rel),
                new=(new_slug, new_rel),
                others=others,
                before={rel: audit.data_hash(data) for rel, data in before.items()},
                placeholders=(applied.created, applied.removed),
            ),
        )
        return RenameResult(
            old_slug=old_slug,
            slug=new_slug,
            title=title_from_path(new_rel),
            path=new_rel,
            rewritten=sorted(new_slug if rel == old_rel else slug_from_path(rel) for rel in texts)
            if plan
            else [],
            links_rewritten=sum(rewrite.links for rewrite in texts.values()),
            retargeted=plan.retargeted if plan else [],
        )


def _new_path(old_rel: str, new_name: str) -> str:
    """A new title stays in the page's folder; a path (a folder part, or a leading `/`)
    is taken from the vault's top."""
    text = new_name.strip().replace("\\", "/")
    if "/" in text.removeprefix("./").rstrip("/"):
        return file_path_for(text)
    folder = old_rel.rpartition("/")[0]
    return file_path_for(f"{folder}/{parse_name(text).text}" if folder else text)


class _Rewrite(NamedTuple):
    """A page whose links a rename rewrites: its bytes before and after, and how many
    links change."""

    before: bytes
    after: bytes
    links: int


@dataclass
class _Rewrites:
    """The links a rename must rewrite, page by page."""

    vault: AppState
    old_slug: str
    old_rel: str
    new_rel: str
    retargeted: list[RetargetedLink] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.new_slug = slug_from_path(self.new_rel)
        self.after = SlugSet(self.vault.pages)
        self.after.remove(self.old_slug)
        self.after.add(self.new_slug)
        self.after_aliases: Aliases = self.vault.aliases.moved(self.old_slug, self.new_slug)
        self._paths: dict[str, str] = {}

    def path_of(self, slug: str) -> str:
        """The file of a page (after the rename)."""
        if slug == self.new_slug:
            return self.new_rel
        if slug not in self._paths:
            row = self.vault.index.pages.get(slug)
            assert row is not None and row.path is not None, slug
            self._paths[slug] = row.path
        return self._paths[slug]

    def texts(self) -> dict[str, _Rewrite]:
        """Every page with a link to rewrite, by its path before the rename: its bytes
        before and after, and how many links change."""
        table = self.vault.index.links
        sources = {link.source for link in table.to_page(self.old_slug)} | {self.old_slug}
        sources |= {link.source for link in table.with_keys(suffixes(self.new_slug))}
        sources |= {
            link.source for link in table.with_keys(sorted(self.vault.aliases.of(self.old_slug)))
        }
        found: dict[str, _Rewrite] = {}
        for source in sorted(sources & set(self.vault.pages)):
            rel = self.old_rel if source == self.old_slug else self.path_of(source)
            data = read_bytes(self.vault, rel)
            text = data.decode("utf-8", errors="surrogateescape")
            changes = self._changes(source, text)
            if changes:
                new = links.replace_spans(text, changes)
                found[rel] = _Rewrite(
                    data, new.encode("utf-8", errors="surrogateescape"), len(changes)
                )
        return found

    def _changes(self, source: str, text: str) -> dict[tuple[int, int], str]:
        moved = source == self.old_slug
        here = self.new_slug if moved else source
        folder = (self.new_rel if moved else self.path_of(source)).rpartition("/")[0]
        was_in = self.old_rel.rpartition("/")[0] if moved else folder
        changes: dict[tuple[int, int], str] = {}
        for link in links.scan(text).links:
            if link.is_same_page or link.is_attachment:
                continue
            before_key, after_key = target_key(link.target, source), target_key(link.target, here)
            if before_key is None:
                continue
            before, _ = resolve(self.vault.pages, self.vault.aliases, before_key, source)
            after, ambiguous = (  # a relative link may now climb above the vault: nowhere
                ("", False)
                if after_key is None
                else resolve(self.after, self.after_aliases, after_key, here)
            )
            if before == self.old_slug:
                wanted = self.new_slug
            elif before in self.vault.pages:
                wanted = before
            else:  # it led nowhere: a page appearing there is what it waited for
                if after != before:
                    self._retarget(source, link, before, after)
                continue
            if (
                after == wanted
                and not ambiguous
                and (wanted != self.new_slug or self._names(link, folder))
            ):
                continue
            form = self._form(link, wanted, here, (was_in, folder))
            if form is None:
                self._retarget(source, link, before, after)
            else:
                changes[(link.start, link.end)] = links.written_as(link, text, form)
        return changes

    def _retarget(self, source: str, link: links.Link, before: str, after: str) -> None:
        self.retargeted.append(
            RetargetedLink(
                source=source, line=link.line, target=link.target, before=before, after=after
            )
        )

    def _names(self, link: links.Link, folder: str) -> bool:
        """Whether the link's text still names the page as written (Obsidian's reading:
        by path or file name, ignoring case; or by one of its aliases)."""
        written = _fold(link.target.replace("\\", "/").strip())
        if written.endswith(".md"):
            written = written[:-3]
        path = _fold(self.new_rel[:-3])
        if written.startswith(("./", "../")):
            return posixpath.normpath(posixpath.join(folder, written)) == path
        if written.startswith("/"):
            return written[1:] == path
        if path == written or path.endswith("/" + written):
            return True
        key = target_key(link.target)
        return key is not None and key.path in self.vault.aliases.of(self.old_slug)

    def _form(
        self, link: links.Link, wanted: str, here: str, folders: tuple[str, str]
    ) -> str | None:
        """The link's target rewritten to lead to `wanted` from `here`, in the link's own
        form: what it wrote with only the renamed part changed, else relative, rooted,
        or a tail of the path as long as it was (or as short as leads there alone);
        None when no form does."""
        written = link.target.replace("\\", "/").strip()
        extension = written[-3:] if written.lower().endswith(".md") else ""
        bare = written[: len(written) - len(extension)]
        path = self.path_of(wanted)[:-3]
        was_in, folder = folders
        forms = []
        if wanted == self.new_slug and "/" in bare:
            forms += [_edited(bare, self.old_rel[:-3], path) or ""]
        if written.startswith(("./", "../")):
            relative = posixpath.relpath(path, folder or ".")
            forms += [
                _climbing(bare, was_in, folder) or "",
                relative if relative.startswith("../") else "./" + relative,
            ]
        elif written.startswith("/"):
            forms += ["/" + path]
        else:
            parts = path.split("/")
            depth = min(len(bare.strip("/").split("/")), len(parts))
            lengths = [*range(depth, len(parts) + 1), *range(depth - 1, 0, -1)]
            forms += ["/".join(parts[-n:]) for n in lengths] + ["/" + path]
        for tail in filter(None, forms):
            form = _cased_as(written, tail) + extension
            key = target_key(form, here)
            if not key or not (link.markdown or links.is_valid_target(form)):
                continue
            if resolve(self.after, self.after_aliases, key, here) == (wanted, False):
                return form
        return None


def _edited(written: str, old: str, new: str) -> str | None:
    """The written target with the part that named the old path changed to name the
    new one, the rest as it was (`../de/Page` → `../de/Elsewhere/Page`); None when the
    new path is not under the folder the written part started from."""
    parts, old_parts, new_parts = written.split("/"), old.split("/"), new.split("/")
    same = 0
    while same < min(len(parts), len(old_parts)) and slugify(parts[-1 - same]) == slugify(
        old_parts[-1 - same]
    ):
        same += 1
    folder = old_parts[: len(old_parts) - same]
    if not same or new_parts[: len(folder)] != folder:
        return None
    return "/".join(parts[: len(parts) - same] + new_parts[len(folder) :])


def _climbing(written: str, was_in: str, now_in: str) -> str | None:
    """A relative target written from the folder `was_in`, written from `now_in` so that
    it climbs to the same folder and goes down the same way (`../zh/Page` from `zh/`
    is `../../zh/Page` from `zh/more/`); None when that folder is not above `now_in`."""
    rest, ups = written, 0
    while rest.startswith("../"):
        rest, ups = rest[3:], ups + 1
    rest = rest.removeprefix("./")
    before = was_in.split("/") if was_in else []
    after = now_in.split("/") if now_in else []
    if ups > len(before) or after[: len(before) - ups] != before[: len(before) - ups]:
        return None
    climb = len(after) - (len(before) - ups)
    return ("../" * climb or "./") + rest


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _cased_as(written: str, form: str) -> str:
    """`form` in lowercase when the link was written so (it still names the page:
    Obsidian ignores case), so that renaming back restores the link as it was."""
    letters = [char for char in written if char.isalpha()]
    return form.lower() if letters and all(char.islower() for char in letters) else form
