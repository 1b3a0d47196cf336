"""Page paths and the files they are: symlinks that lead out of the vault.

Every read, write, stamp and history link goes through `real_path` or `entry_path`,
resolved at the time of use: a page that a checkout later turns into a symlink out of the
vault is no longer a page, and nothing is read from or written through it.
"""

from __future__ import annotations

from pathlib import Path


def inside(root: Path, path: Path) -> bool:
    """True when `path`, with symlinks followed, stays inside `root` (already resolved)."""
    try:
        return path.resolve().is_relative_to(root)
    except (OSError, RuntimeError):  # a symlink loop
        return False


def real_path(root: Path, rel: str) -> Path | None:
    """The file page path `rel` is, every symlink on the way followed, when it is inside
    `root` (resolved); None when a symlink leads out (or round in a loop). For reading."""
    try:
        path = (root / rel).resolve()
    except (OSError, RuntimeError):
        return None
    return path if path.is_relative_to(root) else None


def entry_path(root: Path, rel: str) -> Path | None:
    """Where page path `rel` is as a folder entry: its folder with symlinks followed, when
    that is inside `root`, then its own name, not followed (a symlink there is itself
    replaced, moved or removed). None when the folder leads out. For writing."""
    path = root / rel
    try:
        folder = path.parent.resolve()
    except (OSError, RuntimeError):
        return None
    return folder / path.name if folder.is_relative_to(root) else None
