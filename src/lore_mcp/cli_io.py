"""The command line's input and output: the page content piped to a write, each result
printed (tables on a terminal, plain text when piped, one JSON document with `--json`),
what `lore read` says on stderr besides the file, the index's progress, and log lines on
stderr.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

from pydantic import BaseModel
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from lore_mcp import display, display_doctor
from lore_mcp.errors import InvalidArgumentError
from lore_mcp.models import DoctorReport, PageView


@dataclass(frozen=True, slots=True)
class Source:
    """What `lore read` prints: the page's file as it is (the page as read with --json)."""

    page: PageView
    data: bytes | None


@dataclass(frozen=True, slots=True)
class Text:
    """Output that is already text in its own format (`lore graph --format`)."""

    text: str


def stdin_text(command: str) -> str:
    """The page content piped in, exactly as sent (no newline translation)."""
    if sys.stdin is None:
        raise InvalidArgumentError(f"lore {command} reads from stdin, and there is none.")
    if sys.stdin.isatty():
        print("lore: reading the page from stdin; end it with Ctrl-D", file=sys.stderr)
    data: bytes = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidArgumentError(
            f"The content on stdin is not valid UTF-8 (byte {exc.start}); send UTF-8 text."
        ) from None


def write(text: str) -> None:
    """Text to stdout as UTF-8 bytes, whatever the locale, with no newline translation."""
    _write_bytes(text.encode("utf-8"))


def _write_bytes(data: bytes) -> None:
    sys.stdout.flush()
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()


def print_result(result: BaseModel | Source | Text, as_json: bool, every_row: bool = False) -> None:
    if isinstance(result, Text):
        write(result.text)
    elif isinstance(result, Source):
        if as_json:
            write(result.page.model_dump_json(indent=2) + "\n")
        else:
            _write_bytes(result.data or b"")
            _page_notes(result.page)
    elif as_json:
        write(result.model_dump_json(indent=2) + "\n")
    else:
        draw: display.Draw = (
            partial(display_doctor.show, result, rows=None if every_row else display_doctor.ROWS)
            if isinstance(result, DoctorReport)
            else partial(display.show, result)
        )
        if sys.stdout.isatty():
            display.on_terminal(draw, sys.stdout)
        else:
            write(display.plain_text(draw))


def _page_notes(page: PageView) -> None:
    """What `lore read` cannot put on stdout without breaking the round trip."""
    if (kept := page.version) is not None:
        print(
            f"lore: version {kept.number} of {page.kept_versions} of {page.path}, kept "
            f"{kept.time} when {kept.tool} ({kept.door}) replaced it.",
            file=sys.stderr,
        )
    if page.is_placeholder:
        sources = ", ".join(b.slug for b in page.backlinks) or "nothing"
        print(
            f"lore: {page.slug} is a placeholder (no file yet), linked from {sources}.",
            file=sys.stderr,
        )
    if page.alternatives:
        print(f"lore: the name also matches {', '.join(page.alternatives)}.", file=sys.stderr)
    if page.encoding_errors:
        print(
            f"lore: {page.path} is not valid UTF-8; its bytes were printed as they are. "
            "`lore save` takes UTF-8 only; append, prepend, edit and --section refuse it.",
            file=sys.stderr,
        )


@contextmanager
def progress_bar(
    console: Console | None = None, transient: bool = False
) -> Iterator[Callable[[int, int], None]]:
    """A progress callback `(done, total)` drawing a bar on stderr; the bar appears on
    the first call, so a pass with nothing to parse shows nothing."""
    bar = Progress(
        TextColumn("indexing"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files"),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=console or Console(stderr=True),
        transient=transient,
    )
    task: TaskID | None = None

    def report(done: int, total: int) -> None:
        nonlocal task
        if task is None:
            bar.start()
            task = bar.add_task("indexing", total=total)
        bar.update(task, completed=done, total=total)

    try:
        yield report
    finally:
        if task is not None:
            bar.stop()


def progress_line(done: int, total: int, elapsed: float) -> str:
    """An index pass's progress as words: how far, how long so far, about how long left."""
    line = f"indexed {done} of {total} changed files in {_duration(elapsed)}"
    if 0 < done < total and elapsed >= 1:
        line += f", about {_duration(elapsed * (total - done) / done)} left"
    return line


def _duration(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60} min {whole % 60:02d} s" if whole >= 60 else f"{whole} s"


class _PlainProgress:
    """Progress as a line on stderr at most once a second, and when done: how far, how
    long so far, and about how long is left."""

    def __init__(self, interval: float = 1.0) -> None:
        self._interval = interval
        self._started = time.monotonic()
        self._next = self._started + interval

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now >= self._next:
            print(
                f"lore: {progress_line(done, total, now - self._started)}",
                file=sys.stderr,
                flush=True,
            )
            self._next = now + self._interval


@contextmanager
def progress(always: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A bar on a terminal; plain lines elsewhere when `always`, else nothing."""
    if sys.stderr.isatty():
        with progress_bar(transient=not always) as report:
            yield report
    else:
        yield _PlainProgress() if always else None


@contextmanager
def logging_to_stderr(level: str) -> Iterator[None]:
    logger = logging.getLogger("lore_mcp")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("lore: %(levelname)s: %(message)s"))
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(level)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)
