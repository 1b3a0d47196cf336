"""Every operation on a vault. The MCP server, the CLI, the watcher and the tests all
come through here, so the doors cannot drift apart.

Each operation waits until the first index pass is done, takes the state's lock, takes
in what other processes committed, and does its work. Writes hold the index's write
lock for the whole operation, so two processes never interleave their changes.
"""

from __future__ import annotations

import gc
import heapq
import logging
import os
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from lore_mcp import audit, files, indexing
from lore_mcp import doctor as diagnosis
from lore_mcp import links as linkparse
from lore_mcp.budget import split_lines
from lore_mcp.errors import (
    AmbiguousNameError,
    ContentTooLargeError,
    FileVanishedError,
    InvalidArgumentError,
    LoreError,
    PageExistsError,
    PageNotFoundError,
    UnsafePathError,
    VaultError,
)
from lore_mcp.graph import Node
from lore_mcp.index import Index
from lore_mcp.models import (
    Backlink,
    Backlinks,
    DeleteResult,
    DoctorReport,
    GraphEdge,
    GraphNode,
    GraphResult,
    LinkedCount,
    Neighbourhood,
    OutgoingLink,
    PageList,
    PageRef,
    PageSummary,
    PageView,
    RenameResult,
    SaveResult,
    SearchHit,
    SearchResults,
    SyncReport,
    TitleMatch,
    TitleMatches,
    VaultShape,
)
from lore_mcp.slugs import (
    Key,
    SlugIndex,
    file_path_for,
    name_key,
    parent,
    pick_candidate,
    slug_from_path,
    slugify,
    target_key,
    title_from_path,
)
from lore_mcp.state import DB_NAME, LORE_DIR, AppState

log = logging.getLogger(__name__)

MAX_QUERY_CHARS = 1000
MAX_MENTION_PAGES = 200
SHAPE_LIST_LIMIT = 50
TRASH_DIR = "trash"


# -- opening --------------------------------------------------------------------------


def open_vault(
    root: Path | str,
    *,
    scan: bool = True,
    read_only: bool = False,
    progress: indexing.Progress | None = None,
) -> AppState:
    """Open a vault: its index (rebuilt if missing, outdated or corrupt) and, unless
    `scan` is false, the graph and an incremental index pass (see `index_vault`). With
    `scan` false that work is left to `index_vault`, which a server runs in the
    background; operations wait for it."""
    root = Path(root).expanduser()
    if not root.is_dir():
        raise VaultError(f"The vault folder {str(root)!r} does not exist or is not a folder.")
    root = root.resolve()
    state = AppState(root=root, index=_open_index(root), read_only=read_only)
    if scan:
        index_vault(state, progress)
    return state


def _open_index(root: Path) -> Index:
    """The index in `<vault>/.lore/`; when the vault cannot hold it (no write permission,
    a read-only mount), in a per-user cache folder instead, so reads still work. Writes
    then fail on the page files themselves, with the reason."""
    lore = root / LORE_DIR
    problem = "the folder is not writable"
    if os.access(lore if lore.is_dir() else root, os.W_OK):
        try:
            return Index(lore / DB_NAME)
        except OSError as exc:
            problem = exc.strerror or str(exc)
    cache = index_cache_dir(root)
    log.warning("cannot keep the index in %s (%s); keeping it in %s", lore, problem, cache)
    try:
        return Index(cache / DB_NAME)
    except OSError as exc:
        raise VaultError(
            f"Cannot create the index in {lore} ({problem}) nor in {cache} "
            f"({exc.strerror or exc}). Make one of them writable."
        ) from exc


def index_cache_dir(root: Path) -> Path:
    """Where a vault that cannot hold `.lore/` keeps its index:
    `$XDG_CACHE_HOME/lore-mcp/<hash of the vault's path>/` (`~/.cache` by default)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path("~/.cache").expanduser())
    return base / "lore-mcp" / files.content_hash(os.fsencode(root))


def index_vault(state: AppState, progress: indexing.Progress | None = None) -> SyncReport:
    """Bring the index up to date with the files (only changed files are parsed), then
    let operations run; the pass's log is copied into the database file after that."""
    try:
        # The commit (at the end of write()) leaves the checkpoint for later.
        deferred = state.index.checkpoint_deferred()
        with state.lock, deferred, state.index.write(), _no_cycle_collection():
            indexing.load(state)
            report = indexing.sync(state, progress=progress)
    finally:
        state.ready.set()
    state.index.checkpoint()
    log.info(
        "indexed %s: %d pages, %d placeholders, %d links (%d new, %d changed, %d removed) in %.2fs",
        state.root,
        report.pages,
        report.placeholders,
        report.links,
        report.added,
        report.updated,
        report.removed,
        report.seconds,
    )
    return report


def apply_external_changes(state: AppState, rel_paths: Iterable[str]) -> SyncReport:
    """Apply edits made outside the server to the given files or folders. Idempotent:
    files whose content hash is unchanged cost a stat and a hash, nothing more."""
    scope = [p.strip("/") for p in rel_paths if p.strip("/") and not indexing.ignored(p)]
    with _writing(state, check_read_only=False):
        return indexing.sync(state, scope=scope)


@contextmanager
def _reading(state: AppState) -> Iterator[None]:
    state.ready.wait()
    with state.lock:
        indexing.refresh(state)
        try:
            yield
        except FileVanishedError as exc:
            _forget(state, exc.rel_path)
            raise


@contextmanager
def reads_at_once(state: AppState) -> Iterator[bool]:
    """Whether a read can start at once, without waiting: the first index pass is done,
    no other thread holds the state's lock (held here until the block ends, so it stays
    that way) and no other process has committed since this one last looked (so no
    reload is due). Yields False, holding nothing, when any of that is not so."""
    if not state.ready.is_set() or not state.lock.acquire(blocking=False):
        yield False
        return
    try:
        yield not state.needs_load and state.index.data_version() == state.data_version
    finally:
        state.lock.release()


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Hold Python's cycle collector off. A whole-vault pass allocates millions of
    objects and leaves hardly any cycles; the full collections they would set off cost
    a fifth of a 100k-page pass (40.8 s -> 33.2 s in process, same peak memory)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@contextmanager
def _writing(state: AppState, check_read_only: bool = True) -> Iterator[None]:
    if check_read_only and state.read_only:
        raise VaultError("The vault is open read-only; it cannot be changed.")
    state.ready.wait()
    with state.lock:
        generation = state.generation
        try:
            with state.index.write():
                indexing.refresh(state)
                yield
        except BaseException as exc:
            if state.generation != generation:  # the graph changed with the rolled-back index
                indexing.load(state)
            if isinstance(exc, FileVanishedError):
                _forget(state, exc.rel_path)
            raise


def _forget(state: AppState, rel_path: str) -> None:
    """Take a file that vanished mid-operation out of the index, in a transaction of its own."""
    with state.index.write():
        indexing.sync(state, scope=[rel_path])


# -- names --------------------------------------------------------------------------


def _lookup(state: AppState, name: str) -> tuple[list[str], bool]:
    """Every slug a name could mean, and whether they are placeholders."""
    key = name_key(name)
    found = state.pages.matches(key)
    if found:
        return found, False
    found = state.placeholders.matches(key)
    if found:
        return found, True
    raise PageNotFoundError(name, suggest(state, key))


def suggest(state: AppState, key: Key, count: int = 5, substrings: bool = True) -> list[str]:
    """Up to `count` existing slugs spelled like `key` (then, with `substrings`, those
    that contain it)."""
    last = key.path.rpartition("/")[2]
    indexes = (state.pages, state.placeholders)
    rated = {pair for index in indexes for pair in index.close_names(last, count)}
    close = [name for _, name in heapq.nlargest(count, rated)]
    found = [s for name in [last, *close] for index in indexes for s in index.named(name)]
    found = list(dict.fromkeys(found))
    if substrings and len(found) < count:
        found += sorted(s for s in state.pages if last and last in s and s not in found)
    return found[:count]


def _resolve_read(state: AppState, name: str) -> tuple[str, list[str]]:
    found, _ = _lookup(state, name)
    chosen = found[0] if len(found) == 1 else pick_candidate(found, None)
    return chosen, [s for s in found if s != chosen]


def _unique(slugs: SlugIndex, name: str) -> str | None:
    """The one slug among `slugs` that `name` means; None when none; writes refuse more."""
    found = slugs.matches(name_key(name))
    if len(found) > 1:
        raise AmbiguousNameError(name, found)
    return found[0] if found else None


def _resolve_write(state: AppState, name: str) -> str | None:
    """The one real page a write names; None when it names no page."""
    return _unique(state.pages, name)


def _placeholder_for(state: AppState, name: str) -> str | None:
    """The one placeholder a write names; None when it names none."""
    return _unique(state.placeholders, name)


def _node(state: AppState, slug: str) -> Node:
    """The graph's node for a slug the title index just gave (so it is in the graph)."""
    node = state.graph.node(slug)
    assert node is not None, slug
    return node


def _title(state: AppState, slug: str) -> str:
    node = state.graph.node(slug)
    return node.title if node is not None else slug


# -- files ----------------------------------------------------------------------------


def _check_inside(state: AppState, rel: str) -> None:
    """A new file must land inside the vault, not through a folder symlink leading out."""
    existing = (state.root / rel).parent
    while not existing.exists() and existing != state.root:
        existing = existing.parent
    if not files.inside(state.root, existing):
        raise UnsafePathError(
            f"{rel!r} would be written outside the vault (a folder on its path is a "
            "symbolic link that leads out). Choose a name in another folder."
        )


def _check_new_file(state: AppState, rel: str) -> None:
    """A new page's file must land inside the vault and must not replace a file the
    index does not hold (too large, a symlink leading out, a slug collision)."""
    _check_inside(state, rel)
    path = state.root / rel
    if path.exists() or path.is_symlink():
        raise VaultError(
            f"A file already exists at {rel!r} but is not indexed (it is too large, a "
            "symbolic link leading outside the vault, or shares its slug with another "
            "file; `lore doctor` says which). It was left as it is; choose another name."
        )


def _read_text(state: AppState, slug: str, rel_path: str) -> str:
    try:
        data = (state.root / rel_path).read_bytes()
    except FileNotFoundError:
        raise FileVanishedError(rel_path) from None
    except OSError as exc:
        raise VaultError(f"Cannot read {rel_path!r}: {exc.strerror or exc}.") from exc
    text, _ = files.decode(data)
    return text.removeprefix("\ufeff")


def _encode_content(state: AppState, content: str) -> bytes:
    if "\x00" in content:
        raise InvalidArgumentError("Content cannot contain NUL bytes.")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            "Content is not valid Unicode (it holds a lone surrogate); send UTF-8 text."
        ) from None
    if len(data) > state.max_content_bytes:
        raise ContentTooLargeError(len(data), state.max_content_bytes)
    return data


def _page_path(state: AppState, slug: str) -> str:
    row = state.index.get_page(slug)
    if row is None or row.path is None:
        raise PageNotFoundError(slug)
    return row.path


# -- CRUD ---------------------------------------------------------------------------


def read_page(state: AppState, name: str, offset: int = 0) -> PageView:
    """A page's Markdown from line `offset` on (0: all of it), its backlinks and its
    outgoing links. A placeholder reads as empty content plus who links to it."""
    with _reading(state):
        slug, alternatives = _resolve_read(state, name)
        row = state.index.get_page(slug)
        if row is None:
            raise PageNotFoundError(name)
        content = "" if row.path is None else _read_text(state, slug, row.path)
        lines = split_lines(content)
        if offset < 0 or (offset and offset >= len(lines)):
            raise InvalidArgumentError(
                f"offset={offset} is past the end: {slug!r} has {len(lines)} lines. "
                "Read it from offset=0."
            )
        return PageView(
            slug=slug,
            title=row.title,
            path=row.path,
            content="".join(lines[offset:]) if offset else content,
            offset=offset,
            total_lines=len(lines),
            is_placeholder=row.is_placeholder,
            backlinks=[
                PageRef(slug=s, title=_title(state, s)) for s in state.graph.linking_to(slug)
            ],
            links=_outgoing(state, slug),
            alternatives=alternatives,
        )


def _outgoing(state: AppState, slug: str) -> list[OutgoingLink]:
    return [
        OutgoingLink(
            target=k.target,
            slug=k.resolved,
            exists=k.resolved in state.pages,
            line=k.line,
            ambiguous=k.ambiguous,
        )
        for k in state.index.links_from(slug)
    ]


def save_page(state: AppState, name: str, content: str, *, door: str = "api") -> SaveResult:
    """Create, overwrite or promote the page `name`, then reindex it in the same call.
    A change is recorded in the audit log as made through `door`."""
    with _writing(state):
        data = _encode_content(state, content)
        slug = _resolve_write(state, name)
        created = promoted = False
        if slug is not None:
            rel = _page_path(state, slug)
        elif (placeholder := _placeholder_for(state, name)) is not None:
            slug, rel, promoted = placeholder, _promotion_path(state, placeholder), True
        else:
            rel = file_path_for(name)
            slug, created = slug_from_path(rel), True
        if (created or promoted) and (state.root / rel).exists():
            indexing.sync(state, scope=[rel])  # written outside, not indexed yet?
            if slug in state.pages:
                created = promoted = False
        if created or promoted:
            _check_new_file(state, rel)
        old = state.index.get_page(slug)
        path = state.root / rel
        applied = indexing.Applied()
        unchanged = (
            old is not None
            and old.path == rel
            and path.is_file()
            and old.hash == files.content_hash(data)
        )
        if not unchanged:
            before = audit.file_hash(path)
            files.atomic_write(path, data)
            st = path.stat()
            page = files.parse(rel, data, st.st_size, st.st_mtime_ns)
            applied = indexing.apply(state, [page], [])
            audit.append(
                state,
                audit.AuditRecord(
                    door=door,
                    tool="save_page",
                    slug=slug,
                    path=rel,
                    before=before,
                    after=audit.data_hash(data),
                    placeholders_created=applied.created,
                    placeholders_removed=applied.removed,
                ),
            )
        return SaveResult(
            slug=slug,
            title=title_from_path(rel),
            path=rel,
            created=created,
            promoted=promoted,
            unchanged=unchanged,
            links=_outgoing(state, slug),
            placeholders_created=applied.created,
            placeholders_removed=applied.removed,
        )


def _promotion_path(state: AppState, slug: str) -> str:
    """The file a promoted placeholder gets: named as its first link wrote it."""
    row = state.index.get_page(slug)
    title = row.title if row is not None else slug.rpartition("/")[2]
    first = state.index.first_targets([slug]).get(slug)
    if first is not None and not first.lstrip().startswith(("./", "../", "/")):
        written = first.strip().replace("\\", "/")
        try:
            candidate = file_path_for(written)
            if slug_from_path(candidate) == slug:
                return candidate
        except LoreError:
            pass
    folder = parent(slug)
    for sibling in state.pages:
        if parent(sibling) == folder and folder:
            sibling_path = state.index.get_page(sibling)
            if sibling_path is not None and sibling_path.path is not None:
                return f"{sibling_path.path.rpartition('/')[0]}/{file_path_for(title)}"
    return file_path_for(f"{folder}/{title}" if folder else title)


def delete_page(state: AppState, name: str, *, door: str = "api") -> DeleteResult:
    """Move the page's file to `.lore/trash/` and drop it from index and graph. If other
    pages still link to it, it stays on as a placeholder. Recorded in the audit log."""
    with _writing(state):
        slug = _resolve_write(state, name)
        if slug is None:
            if _placeholder_for(state, name) is not None:
                raise LoreError(
                    f"{name!r} is a placeholder: no file exists, so there is nothing to "
                    "delete. It goes away by itself when no page links to it."
                )
            raise PageNotFoundError(name, suggest(state, name_key(name)))
        rel = _page_path(state, slug)
        before = audit.file_hash(state.root / rel)
        trash = _trash(state, rel)
        applied = indexing.apply(state, [], [slug])
        if _settle_shared_slug(state, slug):  # a file that shared the slug is the page now
            applied.created = [s for s in applied.created if s != slug]
        audit.append(
            state,
            audit.AuditRecord(
                door=door,
                tool="delete_page",
                slug=slug,
                path=rel,
                before=before,
                after=None,
                trash_path=trash or None,
                placeholders_created=applied.created,
                placeholders_removed=applied.removed,
            ),
        )
        return DeleteResult(
            slug=slug,
            path=rel,
            trash_path=trash,
            became_placeholder=slug in state.placeholders or bool(applied.created),
            placeholders_created=applied.created,
            placeholders_removed=applied.removed,
        )


def _settle_shared_slug(state: AppState, slug: str) -> bool:
    """After the file holding `slug` went or moved: files that share the slug and were
    passed over (shadowed) compete again, as in a fresh index. True if one of them now
    holds it."""
    waiting = [path for path, shadowed_slug in state.index.shadowed() if shadowed_slug == slug]
    if not waiting:
        return False
    indexing.sync(state, scope=waiting)
    return slug in state.pages


def _trash(state: AppState, rel: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    dest_rel = f"{LORE_DIR}/{TRASH_DIR}/{stamp}-{uuid.uuid4().hex[:8]}/{rel}"
    dest = state.root / dest_rel
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        (state.root / rel).replace(dest)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise VaultError(f"Cannot move {rel!r} to the trash: {exc.strerror or exc}.") from exc
    return dest_rel


def rename_page(state: AppState, name: str, new_name: str, *, door: str = "api") -> RenameResult:
    """Move a page to a new title or `folder/New Title` and rewrite exactly the links
    that pointed at it, in every page. Recorded in the audit log."""
    with _writing(state):
        old_slug = _resolve_write(state, name)
        if old_slug is None:
            raise PageNotFoundError(name, suggest(state, name_key(name)))
        old_rel = _page_path(state, old_slug)
        new_rel = _new_path(old_rel, new_name)
        new_slug = slug_from_path(new_rel)
        if new_rel == old_rel:
            raise InvalidArgumentError(f"{name!r} is already called {new_name!r}.")
        _check_inside(state, new_rel)
        if new_slug != old_slug and (new_slug in state.pages or (state.root / new_rel).exists()):
            raise PageExistsError(
                f"A page named {new_slug!r} already exists. Pick another name, or merge the "
                "two pages with save_page and delete_page."
            )
        rewrites = _plan_rewrites(state, old_slug, new_slug, new_rel)
        others = {s: _page_path(state, s) for s in rewrites if s != old_slug}
        before = audit.hashes(state.root, [old_rel, *others.values()])
        _move(state, old_rel, new_rel)
        upserts: list[files.Parsed] = []
        for source, (text, _) in rewrites.items():
            rel = new_rel if source == old_slug else _page_path(state, source)
            files.atomic_write(state.root / rel, text.encode("utf-8", "surrogateescape"))
        for rel in {new_rel, *(_page_path(state, s) for s in rewrites if s != old_slug)}:
            parsed = files.read_page_file(state.root, rel)
            if parsed is not None:
                upserts.append(parsed)
        applied = indexing.apply(state, upserts, [old_slug])
        if _settle_shared_slug(state, old_slug):
            applied.created = [s for s in applied.created if s != old_slug]
        audit.append(
            state,
            audit.renamed(
                state.root,
                door,
                old=(old_slug, old_rel),
                new=(new_slug, new_rel),
                others=others,
                before=before,
                placeholders=(applied.created, applied.removed),
            ),
        )
        rewritten = sorted(new_slug if s == old_slug else s for s in rewrites)
        return RenameResult(
            old_slug=old_slug,
            slug=new_slug,
            title=title_from_path(new_rel),
            path=new_rel,
            rewritten=rewritten,
            links_rewritten=sum(n for _, n in rewrites.values()),
        )


def _new_path(old_rel: str, new_name: str) -> str:
    text = new_name.strip().replace("\\", "/")
    if "/" in text.strip("/"):
        return file_path_for(text)
    folder = old_rel.rpartition("/")[0]
    return f"{folder}/{file_path_for(text)}" if folder else file_path_for(text)


def _move(state: AppState, old_rel: str, new_rel: str) -> None:
    dest = state.root / new_rel
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        (state.root / old_rel).replace(dest)
    except OSError as exc:
        raise VaultError(f"Cannot move {old_rel!r} to {new_rel!r}: {exc.strerror or exc}.") from exc
    files.fsync_dir(dest.parent)


def _plan_rewrites(
    state: AppState, old_slug: str, new_slug: str, new_rel: str
) -> dict[str, tuple[str, int]]:
    """New text for every page holding a link that meant the page and would not mean it
    after the rename, with how many links change. Links that still resolve stay as
    they are, byte for byte."""
    sources = sorted({k.source for k in state.index.links_to(old_slug)})
    before = {s: _parse_source(state, s) for s in sources}
    pointing = {
        s: [i for i, link in enumerate(links) if _resolve_link(state.pages, s, link) == old_slug]
        for s, (_, links) in before.items()
    }
    after = SlugIndex(state.pages)
    after.remove(old_slug)
    after.add(new_slug)
    plans: dict[str, tuple[str, int]] = {}
    for source, (text, links) in before.items():
        here = new_slug if source == old_slug else source
        targets = {
            i: _shortest_target(after, here, new_slug, new_rel, links[i].target)
            for i in pointing[source]
            if _resolve_link(after, here, links[i], strict=True) != new_slug
        }
        if targets:
            plans[source] = (linkparse.rewrite_links(text, targets), len(targets))
    return plans


def _parse_source(state: AppState, slug: str) -> tuple[str, list[linkparse.Link]]:
    """A page's text for rewriting: bytes that are not UTF-8 (and a BOM) survive the
    round trip, since only link targets change."""
    rel = _page_path(state, slug)
    try:
        data = (state.root / rel).read_bytes()
    except FileNotFoundError:
        raise FileVanishedError(rel) from None
    except OSError as exc:
        raise VaultError(
            f"Cannot read {rel!r} to rewrite its links: {exc.strerror or exc}. Nothing was "
            "changed; try again once the file is back."
        ) from exc
    text = data.decode("utf-8", errors="surrogateescape")
    return text, linkparse.extract_links(text)


def _resolve_link(
    pages: SlugIndex, source: str, link: linkparse.Link, strict: bool = False
) -> str | None:
    if link.is_same_page or link.is_attachment:
        return None
    key = target_key(link.target, source)
    if key is None:
        return None
    res = pages.resolve(key, source)
    return None if strict and res.ambiguous else res.slug


def _shortest_target(
    pages: SlugIndex, source: str, new_slug: str, new_rel: str, written: str
) -> str:
    """The shortest `a/b/Title` tail of the new path that resolves to the page alone;
    the slug itself when every tail holds a character a link target cannot."""
    parts = new_rel.removesuffix(".md").split("/")
    suffix = ".md" if written.strip().lower().endswith(".md") else ""
    for start in range(len(parts) - 1, -1, -1):
        candidate = "/".join(parts[start:])
        key = target_key(candidate, source)
        if key is not None and linkparse.is_valid_target(candidate):
            res = pages.resolve(key, source)
            if res.slug == new_slug and not res.ambiguous:
                return candidate + suffix
    return new_slug


# -- listing and search ---------------------------------------------------------------


def list_pages(
    state: AppState,
    folder: str = "",
    include_placeholders: bool = False,
    offset: int = 0,
    limit: int = 100,
) -> PageList:
    """Pages sorted by slug, optionally under one folder, a page of them at a time."""
    with _reading(state):
        prefix = name_key(folder).path + "/" if folder.strip().strip("/") else ""
        slugs = state.graph.slugs_under(prefix, placeholders=include_placeholders)
        return PageList(
            pages=[_summary(state, slug) for slug in slugs[offset : offset + limit]],
            total=len(slugs),
            offset=offset,
            next_offset=offset + limit if offset + limit < len(slugs) else None,
        )


def _summary(state: AppState, slug: str) -> PageSummary:
    node = _node(state, slug)
    return PageSummary(
        slug=slug,
        title=node.title,
        is_placeholder=node.is_placeholder,
        links_out=state.graph.out_degree(slug),
        links_in=state.graph.in_degree(slug),
    )


def _check_query(query: str) -> None:
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgumentError(f"Queries are limited to {MAX_QUERY_CHARS} characters.")


def search(state: AppState, query: str, limit: int = 10) -> SearchResults:
    """Full-text search, best first (BM25, title above body), last word as a prefix."""
    _check_query(query)
    with _reading(state):
        hits = [
            SearchHit(slug=r.slug, title=r.title, snippet=r.snippet, score=round(r.score, 4))
            for r in state.index.search(query, limit)
        ]
        return SearchResults(query=query, hits=hits)


def search_titles(state: AppState, query: str, limit: int = 20) -> TitleMatches:
    """Pages by title or slug: exact, then prefix, then substring, then close spellings."""
    _check_query(query)
    with _reading(state):
        text = query.strip().lower()
        wanted = "/".join(p for p in (slugify(x) for x in text.replace("\\", "/").split("/")) if p)
        if not wanted:
            return TitleMatches(query=query, matches=[])
        kinds = ("exact", "prefix", "substring")
        ranked = state.graph.folded_titles().ranked(wanted, text, limit)
        matches = [_title_match(state, slug, kinds[kind]) for slug, kind in ranked]
        if len(matches) < limit:
            seen = {match.slug for match in matches}
            matches += _fuzzy_titles(state, wanted, seen, limit - len(matches))
        return TitleMatches(query=query, matches=matches)


def _title_match(state: AppState, slug: str, kind: str) -> TitleMatch:
    node = _node(state, slug)
    return TitleMatch(slug=slug, title=node.title, is_placeholder=node.is_placeholder, match=kind)  # type: ignore[arg-type]


def _fuzzy_titles(state: AppState, wanted: str, seen: set[str], count: int) -> list[TitleMatch]:
    key = Key(wanted, False)
    return [
        _title_match(state, s, "fuzzy")
        for s in suggest(state, key, count + len(seen), substrings=False)
        if s not in seen
    ][:count]


# -- graph ----------------------------------------------------------------------------


def get_backlinks(state: AppState, name: str, include_unlinked: bool = False) -> Backlinks:
    """Lines in other pages that link here; optionally lines that mention the title
    without linking."""
    with _reading(state):
        slug, _ = _resolve_read(state, name)
        title = _title(state, slug)
        linked = [
            Backlink(slug=k.source, title=_title(state, k.source), line=k.line, text=k.context)
            for k in state.index.links_to(slug)
        ]
        unlinked = _mentions(state, slug, title) if include_unlinked else None
        return Backlinks(slug=slug, title=title, linked=linked, unlinked=unlinked)


def _mentions(state: AppState, slug: str, title: str) -> list[Backlink]:
    found: list[Backlink] = []
    for source in sorted(state.index.pages_matching(title, MAX_MENTION_PAGES)):
        if source == slug:
            continue
        row = state.index.get_page(source)
        if row is None or row.path is None:
            continue
        try:
            text = _read_text(state, source, row.path)
        except LoreError:
            continue
        found += [
            Backlink(slug=source, title=row.title, line=line, text=line_text.strip())
            for line, line_text in linkparse.find_mentions(text, title)
        ]
    return found


def get_graph(state: AppState, name: str | None = None, depth: int = 1) -> GraphResult:
    """A page's neighbourhood to `depth` (1-3), or without a name, the vault's shape."""
    if not 1 <= depth <= 3:
        raise InvalidArgumentError("depth must be 1, 2 or 3.")
    with _reading(state):
        if name is None or not name.strip():
            return GraphResult(shape=_shape(state))
        slug, _ = _resolve_read(state, name)
        seen, edges = state.graph.neighbourhood(slug, depth)
        nodes = []
        for node_slug, hops in sorted(seen.items(), key=lambda kv: (kv[1], kv[0])):
            node = state.graph.node(node_slug)
            nodes.append(
                GraphNode(
                    slug=node_slug,
                    title=node.title if node else node_slug,
                    is_placeholder=bool(node and node.is_placeholder),
                    depth=hops,
                )
            )
        return GraphResult(
            neighbourhood=Neighbourhood(
                center=slug,
                depth=depth,
                nodes=nodes,
                edges=[GraphEdge(source=a, target=b) for a, b in edges],
            )
        )


def _shape(state: AppState) -> VaultShape:
    graph = state.graph
    orphans = graph.orphans()

    def counted(pairs: list[tuple[str, int]]) -> list[LinkedCount]:
        return [LinkedCount(slug=s, title=_title(state, s), count=n) for s, n in pairs]

    return VaultShape(
        pages=len(state.pages),
        placeholders=len(state.placeholders),
        links=graph.edge_count(),
        orphans=orphans[:SHAPE_LIST_LIMIT],
        orphan_count=len(orphans),
        most_linked=counted(graph.most_linked(10, placeholders=False)),
        unresolved=counted(graph.most_linked(SHAPE_LIST_LIMIT, placeholders=True)),
    )


def doctor(state: AppState) -> DoctorReport:
    """The vault's health: collisions, undecodable and unindexable files (errors);
    placeholders, ambiguous links and orphans (warnings)."""
    with _reading(state):
        return diagnosis.diagnose(state)
