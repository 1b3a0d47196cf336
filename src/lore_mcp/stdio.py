"""A line filter in front of the SDK's stdio transport, so that every request that
carries an id gets an answer, the malformed ones included.

The SDK drops a line its parser refuses without a word, and the client waits for its own
timeout. While `screened_stdio(screen)` is active, fd 0 and fd 1 are pipes: one thread
reads the client's lines, passes on unchanged each line that `screen` finds nothing
wrong with, and answers the others itself (see `jsonrpc`); a second thread copies the
SDK's output to the client a whole line at a time, so that an answer from the filter
never lands inside one of the SDK's messages. Everything is restored at exit.

At the client's end of input the SDK would stop at once and answer the requests still
running with "Connection closed". So the filter keeps the SDK's input open until every
request it passed on has been answered (or cancelled by the client), then closes it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, TextIO

from lore_mcp import jsonrpc

log = logging.getLogger(__name__)

# Ends the copy of the SDK's output. The SDK never closes its copy of the pipe, so no end
# of file comes; this line, which no JSON message can be, is written after its last.
_END = b"\0end of output\n"

# Longest wait at the end of input for the answers still owed, in seconds: a client that
# closes stdin waits, then sends SIGTERM, which stops the server sooner.
DRAIN_S = 300.0
# The id of a response as the SDK writes it: `{"jsonrpc":"2.0","id":ID,"result"...`.
_RESPONSE_ID = re.compile(rb'^\{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)"')


@dataclass(frozen=True)
class Verdict:
    """What `screen` found in one of the client's lines."""

    refused: str | None = None  # why the SDK cannot read it; None when it can
    request: Any = None  # the id of the request it is, if one
    cancels: Any = None  # the id of the request it cancels, if it is a cancellation


Screen = Callable[[str], Verdict]


class _Owed:
    """The requests passed on to the SDK and not answered yet, by their id as JSON."""

    def __init__(self) -> None:
        self._ids: set[str] = set()
        self._changed = threading.Condition()
        self.ended = False  # the SDK's output has ended: nothing more will be answered

    def add(self, request_id: Any) -> None:
        with self._changed:
            self._ids.add(_key(request_id))

    def settle(self, request_id: Any) -> None:
        with self._changed:
            self._ids.discard(_key(request_id))
            self._changed.notify_all()

    def answered(self, line: bytes) -> None:
        """Settle the request `line` answers, if it is a response."""
        if not self._ids:
            return
        found = _RESPONSE_ID.match(line)
        if found is not None:
            self.settle(json.loads(found.group(1)))
        elif b'"id"' in line and b'"method"' not in line:  # written some other way
            with contextlib.suppress(ValueError, RecursionError):
                message = json.loads(line)
                if isinstance(message, dict) and ("result" in message or "error" in message):
                    self.settle(message.get("id"))

    def end(self) -> None:
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def wait(self, timeout: float) -> bool:
        """Wait until nothing is owed or the SDK's output ends; whether all were answered."""
        with self._changed:
            self._changed.wait_for(lambda: not self._ids or self.ended, timeout)
            return not self._ids


def _key(request_id: Any) -> str:
    return json.dumps(request_id, ensure_ascii=True)


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
def screened_stdio(screen: Screen) -> Iterator[None]:
    """Put the filter between this process's stdin and stdout and whatever serves on fd
    0 and fd 1 within the block. `screen(line)` (the line decoded as the SDK decodes it)
    says whether the SDK can read it, and which request it is or cancels. Without a stdin
    and stdout on fd 0 and fd 1 to stand in front of, the block runs unscreened."""
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
    owed = _Owed()
    reader = threading.Thread(
        target=_screen,
        args=(client_in, to_sdk, client, screen, owed),
        name="lore-stdin",
        daemon=True,
    )
    relay = threading.Thread(
        target=_relay, args=(from_sdk, client, owed), name="lore-stdout", daemon=True
    )
    reader.start()
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
        if not reader.is_alive():  # else it still reads it: a closed fd could be reused
            os.close(client_in)


def _backed_by(stream: TextIO | None, fd: int) -> bool:
    """Whether `stream` is there and reads or writes `fd` (the SDK claims it then)."""
    try:
        return stream is not None and stream.fileno() == fd
    except (AttributeError, OSError, ValueError):
        return False


def _screen(client_in: int, to_sdk: int, client: _Client, screen: Screen, owed: _Owed) -> None:
    """Pass the client's lines to the SDK, or answer them, until the client's end of
    input; then, once the SDK has answered what it was passed, end its input too."""
    source = os.fdopen(client_in, "rb", closefd=False)
    sink = os.fdopen(to_sdk, "wb")
    try:
        for line in source:
            text = line.decode("utf-8", errors="replace")  # as the SDK decodes it
            verdict = screen(text)
            if verdict.refused is not None:
                _answer(text, verdict.refused, client)
                continue
            if verdict.request is not None:
                owed.add(verdict.request)
            if verdict.cancels is not None:
                owed.settle(verdict.cancels)  # the SDK answers a cancelled request never
            # Whole lines only: the SDK's reader also ends a line at a CR, which in a
            # line it can read is only ever whitespace.
            sink.write(line.rstrip(b"\r\n").replace(b"\r", b" ") + b"\n")
            sink.flush()
        if not owed.wait(DRAIN_S):
            log.warning("input ended with requests unanswered after %.0f s; stopping", DRAIN_S)
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


def _relay(from_sdk: int, client: _Client, owed: _Owed) -> None:
    """Copy the SDK's output to the client, a line at a time, up to `_END`, settling
    the requests it answers."""
    source: BinaryIO = os.fdopen(from_sdk, "rb")
    with source:
        try:
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
                owed.answered(line)
        finally:
            owed.end()
