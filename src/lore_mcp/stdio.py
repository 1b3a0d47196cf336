"""The stdio door: the MCP server on this process's stdin and stdout, on the event loop.

The SDK's `stdio_server()` reads and writes the standard streams through worker threads,
one thread hop per message each way. When stdin and stdout are pipes or sockets, which is
how clients start a server, `run_stdio` hands `stdio_server()` streams of its own that sit
on asyncio pipe transports instead, so a message costs no thread hop. Anything else (a
terminal, a file, /dev/null, Windows) is served by the SDK's transport, as before.

It keeps the SDK's safety net: while serving, the protocol runs on private duplicates of
fd 0 and fd 1, fd 0 reads the null device and fd 1 writes to stderr, so stray output from
a tool or a library never reaches the client; both are restored at exit, together with the
blocking mode asyncio takes off the pipes (the pipe ends are shared with other processes).
Stdin closing ends the server; so does the client closing its end of stdout, quietly.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import stat
import sys
from dataclasses import dataclass
from typing import IO, Any, cast

import anyio
from mcp.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from lore_mcp.state import MAX_CONTENT_BYTES

log = logging.getLogger(__name__)

# A page is at most 1 MiB of UTF-8; JSON escaping makes its save_page request at most about
# six times that. A longer line is runaway input: it is skipped, and the server reads on.
MAX_LINE_BYTES = 16 * MAX_CONTENT_BYTES
READ_CHUNK = 256 * 1024
SKIPPED_LINE = "skipped an input line longer than %d bytes"


def run_stdio(server: MCPServer[Any]) -> None:
    """Serve `server` on stdin and stdout until stdin closes (or the client goes away).
    The server's lifespan runs exactly as under `server.run("stdio")`."""
    claim = _claim_std_fds() if _std_fds_are_pipes() else None
    if claim is None:
        server.run("stdio")
        return
    try:
        anyio.run(_serve, server, claim)
    finally:
        claim.release()


def _lowlevel(server: MCPServer[Any]) -> Server[Any]:
    # MCPServer (mcp 2.3) has no public way to serve over streams the caller supplies:
    # run_stdio_async() always builds its own stdio_server(). Its low-level server is what
    # run_stdio_async() runs, lifespan included; the SDK's in-memory client reaches it alike.
    return server._lowlevel_server


# -- the standard descriptors ---------------------------------------------------------------


def _std_fds_are_pipes() -> bool:
    """Whether fd 0 and fd 1 are pipes or sockets that asyncio's pipe transports can take:
    two different ones (the write transport reads its descriptor to notice the reader
    leave, so one socket for both directions would look closed at the first request)."""
    if sys.platform == "win32":
        return False
    try:
        given, taken = os.fstat(0), os.fstat(1)
    except OSError:
        return False
    if (given.st_dev, given.st_ino) == (taken.st_dev, taken.st_ino):
        return False
    return all(stat.S_ISFIFO(s.st_mode) or stat.S_ISSOCK(s.st_mode) for s in (given, taken))


@dataclass
class _Claim:
    """Private duplicates of fd 0 and fd 1 (the wire), and how to put everything back."""

    wire_in: int
    wire_out: int
    undo: contextlib.ExitStack

    def release(self) -> None:
        self.undo.close()


def _claim_std_fds() -> _Claim | None:
    """Move the wire to private descriptors and point fd 0 at the null device, fd 1 at
    stderr. None (and nothing changed) when descriptors cannot be duplicated."""
    import fcntl  # POSIX only; _std_fds_are_pipes() said no on Windows

    undo = contextlib.ExitStack()
    try:
        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        undo.callback(os.close, wire_in)
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
        undo.callback(os.close, wire_out)
        # Asyncio makes the pipes non-blocking; that mode belongs to the open pipe, which
        # the client (or a shell) may share, so it goes back as it was.
        undo.callback(os.set_blocking, wire_in, os.get_blocking(wire_in))
        undo.callback(os.set_blocking, wire_out, os.get_blocking(wire_out))
        _divert(0, os.open(os.devnull, os.O_RDONLY))
        undo.callback(os.dup2, wire_in, 0)
        _divert(1, _stderr_or_null())
        undo.callback(os.dup2, wire_out, 1)
        # Undone first: a stray print still in sys.stdout's buffer goes to stderr now,
        # not to the client once fd 1 is the wire again.
        undo.callback(_flush_stdout)
    except OSError as exc:
        undo.close()
        log.warning("serving stdio through worker threads: %s", exc)
        return None
    return _Claim(wire_in, wire_out, undo)


def _divert(fd: int, target: int) -> None:
    try:
        os.dup2(target, fd)
    finally:
        os.close(target)


def _stderr_or_null() -> int:
    try:
        return os.dup(2)
    except OSError:
        return os.open(os.devnull, os.O_WRONLY)


def _flush_stdout() -> None:
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()


# -- serving --------------------------------------------------------------------------------


async def _serve(server: MCPServer[Any], claim: _Claim) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), _pipe(claim.wire_in, "rb")
    )
    try:
        write_transport, output = await loop.connect_write_pipe(
            _Output, _pipe(claim.wire_out, "wb")
        )
        try:
            await _serve_streams(server, _Lines(reader), output)
        finally:
            await _close_output(write_transport, output)
    finally:
        read_transport.close()


def _pipe(fd: int, mode: str) -> IO[bytes]:
    # closefd=False: the transports close this object; the claim closes the descriptor.
    return cast(IO[bytes], open(fd, mode, buffering=0, closefd=False))


async def _serve_streams(server: MCPServer[Any], lines: _Lines, output: _Output) -> None:
    lowlevel = _lowlevel(server)
    async with anyio.create_task_group() as group:
        group.start_soon(_stop_when_gone, output, group.cancel_scope)
        try:
            # stdio_server() only iterates over stdin and awaits stdout.write and .flush.
            async with stdio_server(
                cast("anyio.AsyncFile[str]", lines), cast("anyio.AsyncFile[str]", output)
            ) as (read_stream, write_stream):
                await lowlevel.run(
                    read_stream, write_stream, lowlevel.create_initialization_options()
                )
        except* _ClientGone:
            pass
        group.cancel_scope.cancel()
    if output.closed.is_set():
        log.info("the client closed its end of stdout; stopping")


async def _stop_when_gone(output: _Output, scope: anyio.CancelScope) -> None:
    """A client that closed its end of stdout can hear nothing more: stop serving."""
    await output.closed.wait()
    scope.cancel()


async def _close_output(transport: asyncio.WriteTransport, output: _Output) -> None:
    """Let go of the wire once what is still buffered has been written."""
    transport.close()
    try:
        await output.closed.wait()
    finally:
        if transport.get_write_buffer_size():  # cancelled before the client read it all
            transport.abort()


class _ClientGone(ConnectionError):
    """Written after the client closed its end of stdout."""

    def __init__(self) -> None:
        super().__init__(errno.EPIPE, "the client closed its end of stdout")


class _Lines:
    """The wire's input as lines of text, for `async for`: UTF-8 with bad bytes replaced
    (as the SDK reads it), any length up to MAX_LINE_BYTES; a longer line is skipped."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._pending = bytearray()
        self._scanned = 0  # this much of _pending holds no newline
        self._skipping = False  # inside an overlong line: drop up to its end

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        while True:
            end = self._pending.find(b"\n", self._scanned)
            if end >= 0:
                line = self._pending[:end]
                del self._pending[: end + 1]
                self._scanned = 0
                if self._skipping or end > MAX_LINE_BYTES:
                    self._skipping = False
                    log.warning(SKIPPED_LINE, MAX_LINE_BYTES)
                    continue
                return line.decode("utf-8", errors="replace")
            if len(self._pending) > MAX_LINE_BYTES:  # no end in sight: drop it as it comes
                self._skipping = True
                self._pending.clear()
            self._scanned = len(self._pending)
            chunk = await self._reader.read(READ_CHUNK)
            if chunk:
                self._pending += chunk
                continue
            # The end of input; the last line may lack its newline.
            if self._skipping:
                self._skipping = False
                log.warning(SKIPPED_LINE, MAX_LINE_BYTES)
            elif self._pending:
                line = self._pending[:]
                self._pending.clear()
                return line.decode("utf-8", errors="replace")
            raise StopAsyncIteration


class _Output(asyncio.Protocol):
    """The wire's output for `stdio_server()`: `write` hands text to the pipe transport,
    `flush` waits while the transport holds more than its high-water mark, so a client
    that reads slowly holds the server back instead of letting output pile up."""

    def __init__(self) -> None:
        # Events, not futures: a cancelled waiter must not cancel what it waits for.
        self.closed = asyncio.Event()
        self._writable = asyncio.Event()
        self._writable.set()
        self._transport: asyncio.WriteTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.WriteTransport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed.set()
        self._writable.set()

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    async def write(self, text: str) -> None:
        if self._transport is None or self.closed.is_set():
            raise _ClientGone
        self._transport.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writable.wait()
        if self.closed.is_set():
            raise _ClientGone
