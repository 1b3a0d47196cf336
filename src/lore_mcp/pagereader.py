"""Reading many page files at once, with a second process doing the reading.

A first index reads and parses every page (nearly half of its work) and applies them to
the index and graph (the rest). With a second CPU, a worker process
(`python -m lore_mcp.pagereader`) reads and parses while this process applies what it
has already sent. Its pages come back in order, in chunks, at most `CHUNKS_AHEAD`
chunks ahead of the caller, so the text of every page is never held at once.

The worker is a plain subprocess talking over pipes: it gets its work on stdin and sends
length-prefixed pickles on stdout. When this process goes away, the worker's next write
fails and it exits; nothing is left running. If it cannot start or dies, the pages it
did not send are read here.
"""

from __future__ import annotations

import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

from lore_mcp import slugs
from lore_mcp.files import Edge, Parsed, read_page_file
from lore_mcp.index import PageRow

log = logging.getLogger(__name__)

# Fewer files than this are read here: the worker takes ~0.2 s to start.
MIN_FILES = 1500
CHUNK_FILES = 250
# Chunks the worker may be ahead of the caller: enough to keep it busy while a batch is
# applied, few enough to keep memory flat.
CHUNKS_AHEAD = 4
_HEADER = struct.Struct("<Q")
_PIPE_BYTES = 1 << 20  # a wider pipe: fewer wake-ups of the thread that drains it
_F_SETPIPE_SZ = 1031  # Linux only

# One parsed file as it crosses the pipe: plain tuples unpickle several times faster
# than dataclasses.
_Wire = tuple[str, tuple[Any, ...] | None, str, list[Edge]]


def read_pages(root: Path, rel_paths: Sequence[str], worker: bool | None = None) -> PageReader:
    """A reader of `rel_paths`, in order. `worker` (by default: when there are many files
    and a second CPU) has a worker process read them, starting at once."""
    if worker is None:
        worker = len(rel_paths) >= MIN_FILES and _cpus() > 1 and bool(sys.executable)
    return PageReader(root, rel_paths, worker)


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


class PageReader:
    """Page files read and parsed, in order: iterate once. With a worker, `close` (or
    leaving a `with` block) stops it if it is still running."""

    def __init__(self, root: Path, rel_paths: Sequence[str], worker: bool) -> None:
        self._root = root
        self._rel_paths = rel_paths
        self._worker: _Worker | None = None
        if worker and rel_paths:
            try:
                self._worker = _Worker(root, rel_paths)
            except OSError as exc:
                log.warning("cannot start a process to read pages (%s); reading them here", exc)

    def __enter__(self) -> PageReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[tuple[str, Parsed | None]]:
        done = 0
        try:
            if self._worker is not None:
                for rel, parsed in self._worker.pages():
                    yield rel, parsed
                    done += 1
                self.close()
            for rel in self._rel_paths[done:]:
                yield rel, read_page_file(self._root, rel)
        finally:
            self.close()

    @property
    def pid(self) -> int | None:
        """The worker process's id while it runs, else None."""
        return None if self._worker is None else self._worker.pid

    def close(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None


class _Worker:
    """The worker process and the thread that drains its pipe into a bounded queue."""

    def __init__(self, root: Path, rel_paths: Sequence[str]) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", __name__],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._stdout: IO[bytes] = self._proc.stdout
        _widen(self._stdout)
        self._chunks: queue.Queue[bytes | None] = queue.Queue(CHUNKS_AHEAD)
        self._stopping = threading.Event()
        from lore_mcp.cli import LOG_FORMAT  # here: the worker process needs no cli

        logs = (logging.getLogger("lore_mcp").getEffectiveLevel(), LOG_FORMAT)
        request = pickle.dumps((str(root), list(rel_paths), logs), pickle.HIGHEST_PROTOCOL)
        self._thread = threading.Thread(
            target=self._drain, args=(self._proc.stdin, request), name="lore-pagereader"
        )
        self._thread.daemon = True
        self._thread.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def pages(self) -> Iterator[tuple[str, Parsed | None]]:
        """The pages the worker sends, until it is done or fails (then it logs why)."""
        while (payload := self._chunks.get()) is not None:
            for rel, row, body, edges in pickle.loads(payload):
                yield rel, None if row is None else Parsed(PageRow(*row), body, edges)

    def stop(self) -> None:
        self._stopping.set()
        if self._proc.poll() is None:
            self._proc.kill()
        self._thread.join()
        self._proc.wait()
        self._stdout.close()

    def _drain(self, stdin: IO[bytes], request: bytes) -> None:
        """Send the work, then move each chunk from the pipe to the queue; None at the end."""
        try:
            with stdin:
                stdin.write(request)
            while not self._stopping.is_set():
                header = self._stdout.read(_HEADER.size)
                if len(header) < _HEADER.size:
                    break
                size = _HEADER.unpack(header)[0]
                payload = self._stdout.read(size)
                if len(payload) < size or not self._put(payload):
                    break
        except (OSError, ValueError) as exc:  # the pipe broke or was closed under us
            if not self._stopping.is_set():
                log.warning("the page reading process failed (%s); reading the rest here", exc)
        code = self._proc.wait()
        if code != 0 and not self._stopping.is_set():
            log.warning("the page reading process exited with %s; reading the rest here", code)
        self._put(None)

    def _put(self, item: bytes | None) -> bool:
        """Queue `item`, waiting for room unless the reader is being stopped."""
        while not self._stopping.is_set():
            try:
                self._chunks.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False


def _widen(pipe: IO[bytes]) -> None:
    try:
        import fcntl

        fcntl.fcntl(pipe.fileno(), _F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, OSError):
        pass  # the default size works, with more wake-ups


# -- the worker process -------------------------------------------------------------------


def _wire(rel: str, parsed: Parsed | None) -> _Wire:
    if parsed is None:
        return rel, None, "", []
    r = parsed.row
    row = (r.slug, r.title, r.path, r.size, r.mtime_ns, r.hash, r.bad_utf8)
    return rel, row, parsed.body, parsed.edges


def main() -> None:
    """Read the request on stdin, send the parsed pages on stdout, chunk by chunk."""
    root, rel_paths, (level, log_format) = pickle.load(sys.stdin.buffer)
    logging.basicConfig(stream=sys.stderr, level=level, format=log_format)
    out = sys.stdout.buffer
    try:
        for start in range(0, len(rel_paths), CHUNK_FILES):
            chunk = [
                _wire(rel, read_page_file(root, rel))
                for rel in rel_paths[start : start + CHUNK_FILES]
            ]
            payload = pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL)
            out.write(_HEADER.pack(len(payload)))
            out.write(payload)
            out.flush()
            slugs.clear_caches()  # they pay off in the server, here they only grow
    except BrokenPipeError:  # the server went away: nobody wants the rest
        os._exit(0)


if __name__ == "__main__":
    main()
