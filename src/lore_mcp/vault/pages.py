"""Reading, saving and deleting one page."""

from __future__ import annotations

import time
import uuid

from lore_mcp import audit
from lore_mcp.config import LORE_DIR
from lore_mcp.errors import (
    ContentTooLargeError,
    FileVanishedError,
    InvalidArgumentError,
    LoreError,
    PageNotFoundError,
    UnsafePathError,
    VaultError,
)
from lore_mcp.links import split_lines
from lore_mcp.models import DeleteResult, OutgoingLink, PageRef, PageView, SaveResult
from lore_mcp.slugs import file_path_for, parent, slug_from_path, title_from_path
from lore_mcp.vault import files, names, sync
from lore_mcp.vault.core import Vault
from lore_mcp.vault.open import reading, writing

TRASH_DIR = "trash"


def read_page(vault: Vault, name: str, offset: int = 0) -> PageView:
    """A page's Markdown from line `offset` on (0: all of it), its backlinks and its
    outgoing links. A placeholder reads as empty content plus who links to it."""
    with reading(vault):
        slug, alternatives = names.for_reading(vault, name)
        row = vault.index.pages.get(slug)
        if row is None:
            raise PageNotFoundError(name)
        content = "" if row.path is None else read_text(vault, row.path)
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
                PageRef(slug=s, title=vault.graph.title(s)) for s in vault.graph.linking_to(slug)
            ],
            links=outgoing(vault, slug),
            alternatives=alternatives,
        )


def outgoing(vault: Vault, slug: str) -> list[OutgoingLink]:
    """The links written in a page, with where each resolves."""
    return [
        OutgoingLink(
            target=link.target,
            slug=link.resolved,
            exists=link.resolved in vault.pages,
            line=link.line,
            ambiguous=link.ambiguous,
        )
        for link in vault.index.links.from_page(slug)
    ]


def read_text(vault: Vault, rel_path: str) -> str:
    """A page file's text (a byte-order mark dropped; bytes that are not UTF-8 replaced)."""
    try:
        data = (vault.root / rel_path).read_bytes()
    except FileNotFoundError:
        raise FileVanishedError(rel_path) from None
    except OSError as exc:
        raise VaultError(f"Cannot read {rel_path!r}: {exc.strerror or exc}.") from exc
    text, _ = files.decode(data)
    return text.removeprefix("\ufeff")


def _encode(vault: Vault, content: str) -> bytes:
    if "\x00" in content:
        raise InvalidArgumentError("Content cannot contain NUL bytes.")
    try:
        data = content.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidArgumentError(
            "Content is not valid Unicode (it holds a lone surrogate); send UTF-8 text."
        ) from None
    if len(data) > vault.max_content_bytes:
        raise ContentTooLargeError(len(data), vault.max_content_bytes)
    return data


def page_path(vault: Vault, slug: str) -> str:
    """The file of a real page."""
    row = vault.index.pages.get(slug)
    if row is None or row.path is None:
        raise PageNotFoundError(slug)
    return row.path


def check_inside(vault: Vault, rel: str) -> None:
    """A new file must land inside the vault, not through a folder symlink leading out."""
    existing = (vault.root / rel).parent
    while not existing.exists() and existing != vault.root:
        existing = existing.parent
    if not files.inside(vault.root, existing):
        raise UnsafePathError(
            f"{rel!r} would be written outside the vault (a folder on its path is a "
            "symbolic link that leads out). Choose a name in another folder."
        )


def save_page(vault: Vault, name: str, content: str, *, door: str = "api") -> SaveResult:
    """Create, overwrite or promote the page `name`, then reindex it in the same call.
    A change is recorded in the audit log as made through `door`."""
    with writing(vault):
        data = _encode(vault, content)
        slug = names.page_for_writing(vault, name)
        created = promoted = False
        if slug is not None:
            rel = page_path(vault, slug)
        elif (placeholder := names.placeholder_for_writing(vault, name)) is not None:
            slug, rel, promoted = placeholder, _promotion_path(vault, placeholder), True
        else:
            rel = file_path_for(name)
            slug, created = slug_from_path(rel), True
        if (created or promoted) and (vault.root / rel).exists():
            sync.sync(vault, scope=[rel])  # written outside, not indexed yet?
            if slug in vault.pages:
                created = promoted = False
        if created or promoted:
            _check_new_file(vault, rel)
        old = vault.index.pages.get(slug)
        path = vault.root / rel
        applied = sync.Applied()
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
            applied = sync.apply(vault, [files.parse(rel, data, st.st_size, st.st_mtime_ns)])
            audit.append(
                vault.root,
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
            links=outgoing(vault, slug),
            placeholders_created=applied.created,
            placeholders_removed=applied.removed,
        )


def _check_new_file(vault: Vault, rel: str) -> None:
    """A new page's file must land inside the vault and must not replace a file the
    index does not hold (too large, a symlink leading out, a slug collision)."""
    check_inside(vault, rel)
    path = vault.root / rel
    if path.exists() or path.is_symlink():
        raise VaultError(
            f"A file already exists at {rel!r} but is not indexed (it is too large, a "
            "symbolic link leading outside the vault, or shares its slug with another "
            "file; `lore doctor` says which). It was left as it is; choose another name."
        )


def _promotion_path(vault: Vault, slug: str) -> str:
    """The file a promoted placeholder gets: named as its first link wrote it."""
    row = vault.index.pages.get(slug)
    title = row.title if row is not None else slug.rpartition("/")[2]
    first = vault.index.links.first_targets([slug]).get(slug)
    if first is not None and not first.lstrip().startswith(("./", "../", "/")):
        written = first.strip().replace("\\", "/")
        try:
            candidate = file_path_for(written)
            if slug_from_path(candidate) == slug:
                return candidate
        except LoreError:
            pass
    folder = parent(slug)
    for sibling in vault.pages:
        if folder and parent(sibling) == folder:
            sibling_row = vault.index.pages.get(sibling)
            if sibling_row is not None and sibling_row.path is not None:
                return f"{sibling_row.path.rpartition('/')[0]}/{file_path_for(title)}"
    return file_path_for(f"{folder}/{title}" if folder else title)


def delete_page(vault: Vault, name: str, *, door: str = "api") -> DeleteResult:
    """Move the page's file to `.lore/trash/` and drop it from index and graph. If other
    pages still link to it, it stays on as a placeholder. Recorded in the audit log."""
    with writing(vault):
        slug = names.page_for_writing(vault, name)
        if slug is None:
            if names.placeholder_for_writing(vault, name) is not None:
                raise LoreError(
                    f"{name!r} is a placeholder: no file exists, so there is nothing to "
                    "delete. It goes away by itself when no page links to it."
                )
            slug = names.existing_page(vault, name)
        rel = page_path(vault, slug)
        before = audit.file_hash(vault.root / rel)
        trash = _trash(vault, rel)
        applied = sync.apply(vault, [], [slug])
        if settle_shared_slug(vault, slug):  # a file that shared the slug is the page now
            applied.created = [s for s in applied.created if s != slug]
        audit.append(
            vault.root,
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
            became_placeholder=slug in vault.placeholders or bool(applied.created),
            placeholders_created=applied.created,
            placeholders_removed=applied.removed,
        )


def settle_shared_slug(vault: Vault, slug: str) -> bool:
    """After the file holding `slug` went or moved: files that share the slug and were
    passed over compete again, as in a fresh index. True if one of them now holds it."""
    waiting = [path for path, shadowed in vault.index.pages.shadowed() if shadowed == slug]
    if not waiting:
        return False
    sync.sync(vault, scope=waiting)
    return slug in vault.pages


def _trash(vault: Vault, rel: str) -> str:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    dest_rel = f"{LORE_DIR}/{TRASH_DIR}/{stamp}-{uuid.uuid4().hex[:8]}/{rel}"
    dest = vault.root / dest_rel
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        (vault.root / rel).replace(dest)
    except FileNotFoundError:
        return ""
    except OSError as exc:
        raise VaultError(f"Cannot move {rel!r} to the trash: {exc.strerror or exc}.") from exc
    return dest_rel
