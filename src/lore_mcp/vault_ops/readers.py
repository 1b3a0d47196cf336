"""Reading many page files at once: in a pass over many files, worker processes read and
parse them while the pass takes in what they give back. The workers end with the process
that started them, even when it is killed."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from lore_mcp.config import READER_PASS_FILES
from lore_mcp.vault_ops.files import Stamp
from lore_mcp.vault_ops.pagefile import OtherFiles, Parsed, Seen, read_page_file

log = logging.getLogger(__name__)

READ_CHUNK = 200
# Chunks each worker may be ahead by: enough that a worker is still busy while this
# process writes a batch (seconds, at times, in a large index), few enough to hold little.
AHEAD_CHUNKS = 6


def read_many(
    root: Path,
    rel_paths: Sequence[str],
    others: OtherFiles | None,
    readers: int,
    *,
    ahead: Mapping[str, Parsed] | None = None,
    stamps: Mapping[str, Stamp] | None = None,
) -> Iterator[tuple[str, Parsed | None]]:
    """`read_page_file` for many files, in order (a page in `ahead`, parsed before the
    write lock was taken, is only read again to check its bytes; one in `stamps`, as a
    pass over the folders just found it, is read as `pagefile.Seen` says). With many files and
    `readers` above 0, that many worker processes read and parse them while this
    process takes in what they give back (reading and parsing is about half the work of
    a first index). If a worker fails to start or dies, the rest is read here. The
    workers end with this process, even when it is killed (see `_end_with_parent`)."""
    seen = _seen(root, stamps or {})
    if not in_workers(len(rel_paths), readers):
        parsed = ahead or {}
        yield from (
            (rel, read_page_file(root, rel, others, parsed.get(rel), seen.get(rel)))
            for rel in rel_paths
        )
        return
    chunks = [
        [(rel, seen.get(rel)) for rel in rel_paths[i : i + READ_CHUNK]]
        for i in range(0, len(rel_paths), READ_CHUNK)
    ]
    done = 0
    try:
        with ProcessPoolExecutor(
            readers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_end_with_parent,
        ) as pool:
            for found in _shared(pool, readers, chunks, root, others):
                yield found
                done += 1
    except (BrokenProcessPool, OSError) as exc:
        log.warning("reading pages in worker processes failed (%s); reading the rest here", exc)
        yield from ((rel, read_page_file(root, rel, others)) for rel in rel_paths[done:])


def in_workers(files: int, readers: int) -> bool:
    """Whether `read_many` reads this many files in worker processes."""
    return files >= READER_PASS_FILES and readers >= 1


_Chunk = list[tuple[str, Seen | None]]
_Read = list[tuple[str, Parsed | None]]


def _shared(
    pool: Executor,
    readers: int,
    chunks: Sequence[_Chunk],
    root: Path,
    others: OtherFiles | None,
) -> Iterator[tuple[str, Parsed | None]]:
    """The chunks read, in order: by the workers, a few ahead, and by this process
    whenever the next one is not ready yet: it reads the first chunk no worker was
    given rather than wait (where writing pages is quicker than reading them, as in a
    first index of a few thousand pages, the work is shared). No future is cancelled:
    a pool that breaks must still be able to fail every one it holds."""
    ahead = AHEAD_CHUNKS * readers
    pending: deque[Future[_Read]] = deque()  # the chunks given to a worker, in order
    here: dict[int, _Read] = {}  # chunks read by this process, until their turn
    queued = 0  # the chunks before this one are given to a worker or read here

    def refill() -> None:
        nonlocal queued
        while queued < len(chunks) and len(pending) < ahead:
            pending.append(pool.submit(_read_chunk, root, chunks[queued], others))
            queued += 1

    for index in range(len(chunks)):
        refill()
        if index in here:
            yield from here.pop(index)
            continue
        head = pending.popleft()  # the first given to a worker is this one
        while not head.done() and queued < len(chunks) and len(here) < ahead:
            here[queued] = _read_chunk(root, chunks[queued], others)
            queued += 1
            refill()
        yield from head.result()


def _seen(root: Path, stamps: Mapping[str, Stamp]) -> dict[str, Seen]:
    if not stamps:
        return {}
    try:
        device = root.stat().st_dev
    except OSError:
        return {}
    return {rel: Seen(stamp, device) for rel, stamp in stamps.items()}


def _end_with_parent() -> None:
    """In a worker: exit as soon as the process that started it ends. A worker waits for
    work on a pipe that it holds open itself, so a parent killed with SIGKILL would leave
    it (and the resource tracker, which waits for every holder of its pipe) running for
    good. `parent_process().join()` returns when the parent's end of the pipe it was
    started through closes, which the kernel does when the parent dies."""
    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch() -> None:
        parent.join()
        os._exit(1)

    threading.Thread(target=watch, name="lore-reader-watchdog", daemon=True).start()


def _read_chunk(
    root: Path, chunk: Sequence[tuple[str, Seen | None]], others: OtherFiles | None
) -> list[tuple[str, Parsed | None]]:
    return [(rel, read_page_file(root, rel, others, seen=seen)) for rel, seen in chunk]
