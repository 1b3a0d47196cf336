"""Renaming and moving a page, and rewriting links so that they keep their meaning.

Every link that could lead elsewhere once the page moves is resolved twice, before and
after, by Obsidian's rules: a link that leads to the same page before and after is
left byte for byte; a link to the page that no longer leads to it is rewritten to the
new name as given; a link to another page that the move would capture, or the moved
page's own relative links, are rewritten to keep their target. A link that led nowhere
and now leads to the page is left, and listed as retargeted. Rewrites keep each link's
form (relative, rooted or a path tail; URL-encoded or in `<>`; alias, heading and `!`
untouched).

Every file the rename changes is kept in the history first; the new bytes go to temp
files and the index takes the change in; then the moves (the page's history with it) and
the audit record are written down (`journal`) before any page file changes, so the
rename happens as one, or not at all.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import NamedTuple

from lore_mcp import audit, links, rewrites
from lore_mcp.errors import FileVanishedError, InvalidArgumentError, PageExistsError
from lore_mcp.models import RenameResult, RetargetedLink
from lore_mcp.pagesets import PageSet, Resolution, resolve
from lore_mcp.slugs import (
    new_file_path,
    parent,
    parse_name,
    path_key,
    slug_from_path,
    suffixes,
    target_key,
    title_from_path,
)
from lore_mcp.vault_ops import apply, files, history, journal, names, pagefile
from lore_mcp.vault_ops.core import AppState
from lore_mcp.vault_ops.files import spelled_on_disk
from lore_mcp.vault_ops.open import writing
from lore_mcp.vault_ops.outside import Change, remember
from lore_mcp.vault_ops.pagefile import content_hash
from lore_mcp.vault_ops.read import read_bytes
from lore_mcp.vault_ops.write import check_expected, check_inside

LISTED = 20  # rewritten pages and retargeted links a rename result lists; it counts them all


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
        old_rel = names.existing(vault, name).rel
        old_handle = vault.handle(old_rel)
        new_rel = spelled_on_disk(vault.root, _new_path(old_rel, new_name))
        if new_rel == old_rel:
            raise InvalidArgumentError(f"{name!r} is already called {new_name!r}.")
        check_inside(vault, new_rel)
        taken = [p for p in vault.pages.at(path_key(new_rel)) if p != old_rel]
        if taken or (new_rel.lower() != old_rel.lower() and (vault.root / new_rel).exists()):
            raise PageExistsError(
                f"A page {(taken or [new_rel])[0]!r} already exists. Pick another name, or "
                "merge the two pages with save_page and delete_page."
            )
        current = read_bytes(vault, old_rel)
        check_expected(old_rel, current, expected_hash)
        plan = _Rewrites(vault, old_rel, new_rel)
        texts = plan.texts()
        before = {old_rel: current} | {rel: rewrite.before for rel, rewrite in texts.items()}
        after = {new_rel: current} | {
            new_rel if was == old_rel else was: rewrite.after for was, rewrite in texts.items()
        }
        with journal.Change(vault) as change:
            applied = _prepare(
                vault, change, (old_rel, new_rel), texts=texts, after=after, door=door
            )
            new_handle = vault.handle(new_rel)
            others = {vault.handle(rel): rel for rel in texts if rel != old_rel}
            if path_key(old_rel) != path_key(new_rel):  # for a later write by the old name
                vault.index.moves.record(path_key(old_rel), new_rel)
            change.commit(
                audit.renamed(
                    door,
                    old=(old_handle, old_rel),
                    new=(new_handle, new_rel),
                    others=others,
                    before={rel: audit.data_hash(data) for rel, data in before.items()},
                    after={rel: audit.data_hash(data) for rel, data in after.items()},
                    placeholders=(vault.handles(applied.created), vault.handles(applied.removed)),
                )
            )
        # Copies of what the rename wrote, for the history of a later outside edit.
        wrote = [Change(rel, None, content_hash(data)) for rel, data in after.items()]
        remember(vault, [Change(old_rel, None, None), *wrote])

        rewritten = sorted(vault.handle(new_rel if rel == old_rel else rel) for rel in texts)
        retargeted = [
            link.model_copy(
                update={
                    "source": vault.handle(link.source),
                    "before": vault.handle(link.before),
                    "after": vault.handle(link.after),
                }
            )
            for link in plan.retargeted
        ]
        return RenameResult(
            old_slug=old_handle,
            slug=new_handle,
            title=title_from_path(new_rel),
            path=new_rel,
            rewritten=rewritten[:LISTED],
            pages_rewritten=len(rewritten),
            links_rewritten=sum(rewrite.links for rewrite in texts.values()),
            retargeted=retargeted[:LISTED],
            retargeted_count=len(retargeted),
        )


def _prepare(
    vault: AppState,
    change: journal.Change,
    move: tuple[str, str],
    *,
    texts: dict[str, _Rewrite],
    after: dict[str, bytes],
    door: str,
) -> apply.Applied:
    """Everything of a rename that comes before its commit point: the rewritten files
    kept in the history, the move and the page's history folder planned, the new
    bytes in temp files, the index changed (not committed)."""
    old_rel, new_rel = move
    for was, rewrite in texts.items():
        change.keep(history.keep(vault.root, was, rewrite.before, "rename_page", door))
    change.move(old_rel, new_rel)
    folders = history.folder_of(old_rel), history.folder_of(new_rel)
    if (vault.root / folders[0]).is_dir():  # the page's history goes with it
        change.make_folders(vault.root / folders[1])
    change.plan.folders.append(folders)
    pages = []
    for rel, data in after.items():
        if rel == new_rel and old_rel not in texts:  # the file itself moves
            try:
                st = files.page_entry(vault.root, old_rel).stat()
            except FileNotFoundError:
                raise FileVanishedError(old_rel) from None
        else:
            st = change.write(rel, data, old_rel if rel == new_rel else None)
        pages.append(pagefile.parse(rel, data, st.st_size, st.st_mtime_ns, vault.others))
    return apply.apply(vault, pages, [old_rel], coming=[new_rel])


def _new_path(old_rel: str, new_name: str) -> str:
    """A new title stays in the page's folder; a path (a folder part, or a leading `/`)
    is taken from the vault's top. It must be a file name Obsidian accepts."""
    text = new_name.strip().replace("\\", "/")
    if "/" in text.removeprefix("./").rstrip("/"):
        return new_file_path(parse_name(text))
    folder = old_rel.rpartition("/")[0]
    title = parse_name(text).text
    return new_file_path(parse_name(f"{folder}/{title}" if folder else title))


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
    old_rel: str
    new_rel: str
    retargeted: list[RetargetedLink] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.after = PageSet(self.vault.pages)
        self.after.remove(self.old_rel)
        self.after.add(self.new_rel)

    def texts(self) -> dict[str, _Rewrite]:
        """Every page with a link to rewrite, by its path before the rename: its bytes
        before and after, and how many links change."""
        table = self.vault.index.links
        sources = {link.source for link in table.to_page(self.old_rel)} | {self.old_rel}
        keys = suffixes(path_key(self.new_rel)) + suffixes(path_key(self.old_rel))
        folds = [f for f in suffixes(slug_from_path(self.new_rel)) if f]
        sources |= {link.source for link in table.with_keys(keys, folds)}
        found: dict[str, _Rewrite] = {}
        for source in sorted(sources & set(self.vault.pages)):
            data = read_bytes(self.vault, source)
            text = data.decode("utf-8", errors="surrogateescape")
            changes = self._changes(source, text)
            if changes:
                new = rewrites.replace_spans(text, changes)
                found[source] = _Rewrite(
                    data, new.encode("utf-8", errors="surrogateescape"), len(changes)
                )
        return found

    def _changes(self, source: str, text: str) -> dict[tuple[int, int], str]:
        moved = source == self.old_rel
        here = self.new_rel if moved else source
        folder = parent(here)
        was_in = parent(source)
        changes: dict[tuple[int, int], str] = {}
        for link in links.scan(text).links:
            if link.is_same_page or link.is_attachment:
                continue
            before_key, after_key = target_key(link.target, source), target_key(link.target, here)
            if before_key is None:
                continue
            before = resolve(self.vault.pages, before_key, source)
            after = (  # a relative link may now climb above the vault: nowhere
                Resolution("", placeholder=True)
                if after_key is None
                else resolve(self.after, after_key, here)
            )
            if before.placeholder:  # it led nowhere: a page appearing there is what it waited for
                if after.target != before.target:
                    self._retarget(source, link, before.target, after.target)
                continue
            wanted = self.new_rel if before.target == self.old_rel else before.target
            if after.target == wanted and (before.loose or not after.loose):
                continue  # the same page before and after: left byte for byte
            form = self._form(link, wanted, here, (was_in, folder))
            if form is None:
                self._retarget(source, link, before.target, after.target)
            else:
                changes[(link.start, link.end)] = rewrites.written_as(link, text, form)
        return changes

    def _retarget(self, source: str, link: links.Link, before: str, after: str) -> None:
        self.retargeted.append(
            RetargetedLink(
                source=source, line=link.line, target=link.target, before=before, after=after
            )
        )

    def _form(
        self, link: links.Link, wanted: str, here: str, folders: tuple[str, str]
    ) -> str | None:
        """The link's target rewritten to lead to `wanted` from `here`, in the link's own
        form: what it wrote with only the renamed part changed, else relative, rooted,
        or a tail of the path as long as it was (or as short as leads there alone);
        None when no form does. The renamed page is named as the new name was given."""
        written = link.target.replace("\\", "/").strip()
        extension = written[-3:] if written.lower().endswith(".md") else ""
        bare = written[: len(written) - len(extension)]
        path = wanted[:-3]
        was_in, folder = folders
        forms = []
        if wanted == self.new_rel and "/" in bare:
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
            form = tail + extension
            key = target_key(form, here)
            if not key or not (link.markdown or rewrites.is_valid_target(form)):
                continue
            found = resolve(self.after, key, here)
            if found.target == wanted and not found.loose:
                return form  # Obsidian's tie-break is a rule: a link that needs it holds
        return None


def _edited(written: str, old: str, new: str) -> str | None:
    """The written target with the part that named the old path changed to name the
    new one, the rest as it was (`../de/Page` → `../de/Elsewhere/Page`); None when the
    new path is not under the folder the written part started from."""
    parts, old_parts, new_parts = written.split("/"), old.split("/"), new.split("/")
    same = 0
    while same < min(len(parts), len(old_parts)) and path_key(parts[-1 - same]) == path_key(
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
