"""Reading many page files at once, with a second process doing the reading.

A first index reads and parses every page (nearly half of its work) and applies them to
the index and graph (the rest). With a second CPU, a worker process
(`python -m lore_mcp.pagereader`) reads and parses while this process applies what it
has already parsed; it can start before this process is ready to apply anything.

The worker writes its pages, pickled in chunks, to an unlinked temporary file (the
spool) and tells this process the size of each chunk on stdout. So it never waits for
this process, its output costs disk and page cache rather than memory, and the text of
every page is never held at once. When this process goes away, the worker's next
write to stdout fails and it exits: nothing is left running, and the spool is gone with
the last descriptor. If the worker cannot start or dies, the pages it did not send are
read here. POSIX only (the spool's descriptor is inherited); elsewhere pages are read
in process.
"""

from __future__ import annotations

import logging
import os
import pickle
import struct
import subprocess
import sys
import tempfile
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
_SIZE = struct.Struct("<Q")  # what the worker says on stdout: the next chunk's size

# One parsed file as it crosses over: plain tuples unpickle several times faster than
# dataclasses.
_Wire = tuple[str, tuple[Any, ...] | None, str, list[Edge]]


def read_pages(
    root: Path, rel_paths: Sequence[str], spool_dir: Path, worker: bool | None = None
) -> PageReader:
    """A reader of `rel_paths`, in order. `worker` (by default: on POSIX, when there are
    many files and a second CPU) has a worker process read them, starting at once, with
    its spool in `spool_dir`."""
    if worker is None:
        worker = (
            os.name == "posix"
            and len(rel_paths) >= MIN_FILES
            and _cpus() > 1
            and bool(sys.executable)
        )
    return PageReader(root, rel_paths, spool_dir if worker else None)


def _cpus() -> int:
    """The CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on every platform
        return os.cpu_count() or 1


class PageReader:
    """Page files read and parsed, in order: iterate once. With a worker, `close` (or
    leaving a `with` block) stops it if it is still running."""

    def __init__(self, root: Path, rel_paths: Sequence[str], spool_dir: Path | None) -> None:
        self._root = root
        self._rel_paths = rel_paths
        self._worker: _Worker | None = None
        if spool_dir is not None and rel_paths:
            try:
                self._worker = _Worker(root, rel_paths, spool_dir)
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
    """The worker process, its spool and the pipe on which it announces each chunk."""

    def __init__(self, root: Path, rel_paths: Sequence[str], spool_dir: Path) -> None:
        from lore_mcp.cli import LOG_FORMAT  # here: the worker process needs no cli

        logs = (logging.getLogger("lore_mcp").getEffectiveLevel(), LOG_FORMAT)
        # stop() closes the spool; unlinked, it disappears with its last descriptor.
        self._spool = tempfile.TemporaryFile(dir=spool_dir, prefix=".lore-read-")  # noqa: SIM115
        try:
            # The request goes in a file too, so handing it over never waits for the worker.
            with tempfile.TemporaryFile(dir=spool_dir, prefix=".lore-read-") as request:
                pickle.dump((str(root), list(rel_paths), logs), request, pickle.HIGHEST_PROTOCOL)
                request.seek(0)
                spool = self._spool.fileno()
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", __name__, str(spool)],
                    stdin=request,
                    stdout=subprocess.PIPE,
                    pass_fds=(spool,),
                )
        except BaseException:
            self._spool.close()
            raise
        assert self._proc.stdout is not None
        self._sizes: IO[bytes] = self._proc.stdout
        self._offset = 0

    @property
    def pid(self) -> int:
        return self._proc.pid

    def pages(self) -> Iterator[tuple[str, Parsed | None]]:
        """The pages the worker sends, until it is done or fails (then it logs why)."""
        while payload := self._next_chunk():
            for rel, row, body, edges in pickle.loads(payload):
                yield rel, None if row is None else Parsed(PageRow(*row), body, edges)
        if self._proc.poll() is None:  # a chunk went missing from the spool: stop here
            self._proc.kill()
        code = self._proc.wait()
        if code != 0:
            log.warning("the page reading process exited with %s; reading the rest here", code)

    def _next_chunk(self) -> bytes:
        """The next chunk from the spool once the worker has written it; b"" at the end."""
        announced = self._sizes.read(_SIZE.size)  # waits for the worker
        if len(announced) < _SIZE.size:
            return b""
        (size,) = _SIZE.unpack(announced)
        payload = os.pread(self._spool.fileno(), size, self._offset)
        if len(payload) < size:
            return b""
        self._offset += size
        return payload

    def stop(self) -> None:
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait()
        self._sizes.close()
        self._spool.close()


# -- the worker process -------------------------------------------------------------------


def _wire(rel: str, parsed: Parsed | None) -> _Wire:
    if parsed is None:
        return rel, None, "", []
    r = parsed.row
    row = (r.slug, r.title, r.path, r.size, r.mtime_ns, r.hash, r.bad_utf8)
    return rel, row, parsed.body, parsed.edges


def main() -> None:
    """Read the request on stdin; write the parsed pages to the spool (the descriptor
    given as the argument), chunk by chunk, announcing each chunk's size on stdout."""
    spool = int(sys.argv[1])
    root, rel_paths, (level, log_format) = pickle.load(sys.stdin.buffer)
    logging.basicConfig(stream=sys.stderr, level=level, format=log_format)
    out = sys.stdout.buffer
    try:
        for start in range(0, len(rel_paths), CHUNK_FILES):
            chunk = [
                _wire(rel, read_page_file(root, rel))
                for rel in rel_paths[start : start + CHUNK_FILES]
            ]
            data = pickle.dumps(chunk, pickle.HIGHEST_PROTOCOL)
            rest = memoryview(data)
            while rest:
                rest = rest[os.write(spool, rest) :]
            out.write(_SIZE.pack(len(data)))
            out.flush()
            slugs.clear_caches()  # they pay off in the server, here they only grow
    except BrokenPipeError:  # the server went away: nobody wants the rest
        os._exit(0)


if __name__ == "__main__":
    main()
