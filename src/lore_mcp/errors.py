"""The few errors lore-mcp raises on purpose.

Every message is written for the agent that reads it: it says what went wrong and what
to do next. The server turns any `LoreError` into an `isError` tool result; the CLI
prints it to stderr and exits non-zero.
"""

from __future__ import annotations

from collections.abc import Sequence


class LoreError(Exception):
    """Base class: an anticipated failure with a message meant for the caller."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class PageNotFoundError(LoreError):
    """No page or placeholder answers to the name."""

    def __init__(self, name: str, suggestions: Sequence[str] = ()) -> None:
        self.name = name
        self.suggestions = list(suggestions)
        hint = (
            f" Did you mean: {', '.join(self.suggestions)}?"
            if self.suggestions
            else " Use search_titles or list_pages to find the page's slug."
        )
        super().__init__(f"No page named {name!r}.{hint}")


class AmbiguousNameError(LoreError):
    """A write names more than one page; writes need a unique match."""

    def __init__(self, name: str, candidates: Sequence[str]) -> None:
        self.name = name
        self.candidates = list(candidates)
        super().__init__(
            f"{name!r} matches several pages: {', '.join(self.candidates)}. "
            "Repeat the call with the path of the one you mean."
        )


class LooseNameError(LoreError):
    """A write whose name matches no page exactly, only one loosely (by an alias or by
    its slug form): the write could land in the wrong page, so it is refused."""

    def __init__(self, name: str, path: str, rule: str, new: str | None) -> None:
        self.name = name
        self.path = path
        how = "an alias" if rule == "alias" else "its slug"
        exact = path[:-3] if path.lower().endswith(".md") else path
        create = f"; to make a new page instead, send an exact path such as {new!r}" if new else ""
        super().__init__(
            f"No page is named exactly {name!r}; {path!r} matches it only by {how}, and "
            f"a write needs an exact name. Nothing was written. To write that page, send "
            f"{exact!r}{create}."
        )


class RenamedPageError(LoreError):
    """A change to part of a page (append, prepend, edit, section) by the name of a page
    that was renamed: it would start a new page at the old name, holding only the part."""

    def __init__(self, name: str, mode: str, old_path: str, handle: str, new_path: str) -> None:
        self.name = name
        self.new_path = new_path
        super().__init__(
            f"{name!r} was renamed: the page {old_path!r} is now {new_path!r}, and "
            f"mode={mode!r} by the old name would start a new page holding only this text. "
            f"Nothing was written. To change the renamed page, send {handle!r}; to make a "
            f"new page {name!r} anyway, repeat the call with expected_hash=''."
        )


class InvalidNameError(LoreError):
    """A page name that cannot become a slug or a file name."""


class UnsafePathError(LoreError):
    """A name that would reach outside the vault or into a hidden folder."""


class ContentTooLargeError(LoreError):
    """Page content over the size limit."""

    def __init__(self, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(
            f"Content is {size:,} bytes; the limit is {limit:,} bytes. "
            "Split it into several linked pages."
        )


class PageExistsError(LoreError):
    """A rename whose new name is already taken."""


class VaultError(LoreError):
    """The vault itself cannot be used as asked (missing, not writable, read-only mode)."""


class VaultBusyError(VaultError):
    """Another process held the index's write lock for longer than a write may wait."""

    def __init__(self, waited: float) -> None:
        self.waited = waited
        super().__init__(
            f"The vault is busy: another process has held its index's write lock for "
            f"{waited:.0f} s (a first index of a large vault, or a large change being taken "
            "in). Nothing was changed; try again in a minute."
        )


class InvalidArgumentError(LoreError):
    """An argument out of range or of the wrong shape (a query, a depth, content)."""


class FileVanishedError(PageNotFoundError):
    """A page's file disappeared from disk while an operation was using it."""

    def __init__(self, rel_path: str) -> None:
        self.rel_path = rel_path
        self.name = rel_path
        self.suggestions = []
        LoreError.__init__(
            self,
            f"The file {rel_path!r} disappeared from disk while it was being used; the "
            "index has caught up with that. Nothing else was changed; repeat the call "
            "if it still makes sense.",
        )


class LeadsOutsideError(FileVanishedError):
    """A page path that a symlink leads out of the vault: the file there is not a page (an
    indexed one that became such a symlink is taken out of the index)."""

    def __init__(self, rel_path: str) -> None:
        super().__init__(rel_path)
        self.message = (
            f"{rel_path!r} leads outside the vault (a symbolic link on its path points out "
            "of it), so it is not a page: nothing was read from it or written through it, "
            "and the index has caught up with that. Choose a name in another folder."
        )


class ConflictError(LoreError):
    """The file is not what the caller last read (`expected_hash` differs), or, with
    `wanted_new` (`expected_hash=""`), it exists already."""

    def __init__(self, rel_path: str, current: str | None, *, wanted_new: bool = False) -> None:
        self.current = current
        if wanted_new:
            super().__init__(
                f"{rel_path!r} already exists (its hash is {current}), and expected_hash='' "
                "asks for a page that does not exist yet. Nothing was written; read the page "
                "and pass its hash as expected_hash to change it, or choose another name."
            )
            return
        now = f"its hash is now {current}" if current else "it no longer exists"
        super().__init__(
            f"{rel_path!r} changed since you read it ({now}). Nothing was written; read the "
            "page again and repeat the change on what it holds now."
        )


class UsageError(LoreError):
    """Command-line arguments that parse but make no sense; exit status 2."""
