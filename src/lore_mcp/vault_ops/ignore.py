"""What the vault's ignore files leave out: `.gitignore` files (the root's and any
folder's) and `.loreignore` files, read with git's own matching rules (`pathspec`).

A file or folder an ignore file matches is not part of the vault: it is no page, a pass
over the files does not look into it, the watcher passes its events over, and a write
to it is refused. A folder's rules apply below it, the deeper ones after its parents',
so a deeper `!pattern` can take back what a parent ignored, as in git (except inside a
folder that is ignored as a whole, which git does not look into either). The rules are
read again when an ignore file changes (its size or modification time).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from pathlib import Path

from pathspec import GitIgnoreSpec

log = logging.getLogger(__name__)

IGNORE_FILES = (".gitignore", ".loreignore")


@dataclass(frozen=True, slots=True)
class _Rules:
    stamp: tuple[tuple[int, int], ...]  # (size, mtime_ns) of each ignore file, 0s if none
    spec: GitIgnoreSpec | None


@dataclass(eq=False)
class Ignores:
    """The ignore rules of the vault at `root`, read lazily folder by folder."""

    root: Path
    _rules: dict[str, _Rules] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def ignored(self, rel: str, is_dir: bool = False) -> bool:
        """Whether the vault-relative path `rel` (a file, or a folder with `is_dir`) is
        left out by an ignore file in one of the folders above it."""
        parts = rel.strip("/").split("/")
        chain: Chain = ()
        for depth in range(len(parts)):
            folder = "/".join(parts[:depth])
            if depth and leaves_out(chain, folder, True):
                return True  # a folder above, ignored as a whole
            chain = self.below(chain, folder)
        return leaves_out(chain, "/".join(parts), is_dir)

    def above(self, folder: str) -> Chain:
        """The rules that apply to what is directly inside `folder` (`""`: the root)
        come from its own ignore files and its parents': all but the folder's own."""
        chain: Chain = ()
        parts = folder.split("/") if folder else []
        for depth in range(len(parts)):
            chain = self.below(chain, "/".join(parts[:depth]))
        return chain

    def below(self, chain: Chain, folder: str, names: frozenset[str] | None = None) -> Chain:
        """The rules that apply inside `folder`: `chain` (its parents') and its own.
        `names`, the folder's entries when a walk has them, spares a look for files that
        are not there."""
        if names is not None and not any(name in names for name in IGNORE_FILES):
            return chain
        spec = self._spec(folder)
        return chain if spec is None else (*chain, (folder, spec))

    def _spec(self, folder: str) -> GitIgnoreSpec | None:
        """The rules of the ignore files in `folder` (vault-relative), read again when one
        of them changed."""
        paths = [self.root / folder / name for name in IGNORE_FILES]
        stamp = tuple(_stamp(path) for path in paths)
        with self._lock:
            known = self._rules.get(folder)
            if known is not None and known.stamp == stamp:
                return known.spec
        lines: list[str] = []
        for path, (size, _) in zip(paths, stamp, strict=True):
            if size or path.is_file():
                try:
                    lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError as exc:
                    log.warning("cannot read %s: %s", path, exc)
        spec = GitIgnoreSpec.from_lines(lines) if any(line.strip() for line in lines) else None
        with self._lock:
            self._rules[folder] = _Rules(stamp, spec)
        return spec

    def forget(self) -> None:
        """Read every ignore file again at the next look."""
        with self._lock:
            self._rules.clear()


Chain = tuple[tuple[str, GitIgnoreSpec], ...]  # (folder, its rules), the deepest last


def leaves_out(chain: Chain, rel: str, is_dir: bool) -> bool:
    """Whether the rules in `chain` leave the path `rel` out: the deepest rule that
    matches decides (a `!pattern` takes back)."""
    decided: bool | None = None
    for folder, spec in chain:
        below = rel[len(folder) + 1 :] if folder else rel
        result = spec.check_file(below + ("/" if is_dir else ""))
        if result.include is not None:
            decided = result.include
    return bool(decided)


def _stamp(path: Path) -> tuple[int, int]:
    try:
        st = path.stat()
    except OSError:
        return (0, 0)
    return (st.st_size, st.st_mtime_ns)


def is_ignore_file(rel: str) -> bool:
    """Whether the path is one of the ignore files (a change to it changes the vault)."""
    return rel.rpartition("/")[2] in IGNORE_FILES
