"""A line filter in front of the SDK's stdio transport, so that every request that
carries an id gets an answer, the malformed ones included.

The SDK drops a line its parser refuses without a word, and the client waits for its own
timeout. While `screened_stdio(refusal)` is active, fd 0 and fd 1 are pipes: one thread
reads the client's lines, passes on unchanged each line that `refusal` finds nothing
wrong with, and answers the others itself (see `jsonrpc`); a second thread copies the
SDK's output to the client a whole line at a time, so that an answer from the filter
never lands inside one of the SDK's messages. Everything is restored at exit.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from typing import BinaryIO, TextIO

from lore_mcp import jsonrpc

log = logging.getLogger(__name__)

# Ends the copy of the SDK's output. The SDK never closes its copy of the pipe, so no end
# of file comes; this line, which no JSON message can be, is written after its last.
_END = b"\0end of output\n"

Refusal = Callable[[str], str | None]


class _Client:
    """The client's end of stdout, written one whole line at a time by either thread."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.gone = False

    def write(self, line: bytes) -> None:
        """Write `line`; BrokenPipeError (and `gone` set) once the client has left."""
        with self._lock:
            view = memoryview(line)
            try:
                while view:
                    view = view[os.write(self._fd, view) :]
            except OSError:
                self.gone = True
                raise


@contextlib.contextmanager
def screened_stdio(refusal: Refusal) -> Iterator[None]:
    """Put the filter between this process's stdin and stdout and whatever serves on fd
    0 and fd 1 within the block. `refusal(line)` says why the SDK cannot read a line
    (decoded as the SDK decodes it), or None when it can. Without a stdin and stdout on
    fd 0 and fd 1 to stand in front of, the block runs unscreened."""
    if not (_backed_by(sys.stdin, 0) and _backed_by(sys.stdout, 1)):
        log.warning("stdin or stdout is no file: malformed lines reach the SDK unscreened")
        yield
        return
    sys.stdout.flush()
    client_in, client_out = os.dup(0), os.dup(1)
    sdk_in, to_sdk = os.pipe()
    from_sdk, sdk_out = os.pipe()
    os.dup2(sdk_in, 0)
    os.dup2(sdk_out, 1)
    os.close(sdk_in)
    client = _Client(client_out)
    screen = threading.Thread(
        target=_screen, args=(client_in, to_sdk, client, refusal), name="lore-stdin", daemon=True
    )
    relay = threading.Thread(
        target=_relay, args=(from_sdk, client), name="lore-stdout", daemon=True
    )
    screen.start()
    relay.start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
        with contextlib.suppress(OSError):
            os.write(sdk_out, _END)
        os.close(sdk_out)
        relay.join()
        os.dup2(client_in, 0)
        os.dup2(client_out, 1)
        os.close(client_out)
        if not screen.is_alive():  # else it still reads it: a closed fd could be reused
            os.close(client_in)


def _backed_by(stream: TextIO | None, fd: int) -> bool:
    """Whether `stream` is there and reads or writes `fd` (the SDK claims it then)."""
    try:
        return stream is not None and stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


def _screen(client_in: int, to_sdk: int, client: _Client, refusal: Refusal) -> None:
    """Pass the client's lines to the SDK, or answer them, until the client's end of
    input; then end the SDK's input too."""
    source = os.fdopen(client_in, "rb", closefd=False)
    sink = os.fdopen(to_sdk, "wb")
    try:
        for line in source:
            text = line.decode("utf-8", errors="replace")  # as the SDK decodes it
            reason = refusal(text)
            if reason is None:
                # Whole lines only: the SDK's reader also ends a line at a CR, which
                # in a line it can read is only ever whitespace.
                sink.write(line.rstrip(b"\r\n").replace(b"\r", b" ") + b"\n")
                sink.flush()
            else:
                _answer(text, reason, client)
    except OSError:  # the SDK has stopped reading: the session is over
        log.debug("stopped passing input on", exc_info=True)
    finally:
        source.close()
        with contextlib.suppress(OSError):
            sink.close()


def _answer(text: str, reason: str, client: _Client) -> None:
    try:
        replies = jsonrpc.replies(text, reason)
    except Exception:  # a fault here must not stop the input: log it, serve on
        log.exception("could not answer a line the SDK cannot read: %.200r", text)
        return
    if not replies:
        log.debug("dropped a malformed notification or response: %.200r", text)
    for reply in replies:
        log.debug("answered %s to a line the SDK cannot read: %.200r", reply["error"], text)
        if client.gone:
            return
        with contextlib.suppress(OSError):
            client.write(jsonrpc.encode(reply))


def _relay(from_sdk: int, client: _Client) -> None:
    """Copy the SDK's output to the client, a line at a time, up to `_END`."""
    source: BinaryIO = os.fdopen(from_sdk, "rb")
    with source:
        for line in source:
            if line == _END:
                return
            try:
                client.write(line)
            except OSError:
                # The client has gone: closing this end makes the SDK's next write
                # fail too, which ends the session as it did without the filter.
                log.debug("the client closed stdout", exc_info=True)
                return
