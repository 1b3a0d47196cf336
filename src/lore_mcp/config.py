"""Limits, defaults, file names and logging: the settings every module may read."""

from __future__ import annotations

import logging
import os
import sys

# Where a vault keeps what lore-mcp adds to it. `.lore/cache/` is a cache (deleting it
# costs a rebuild); the rest of `.lore/` (history, audit log) is the vault's own record.
LORE_DIR = ".lore"
CACHE_DIR = "cache"
DB_NAME = "lore.db"
AUDIT_FILE = "audit.jsonl"
HISTORY_DIR = "history"
JOURNAL_FILE = "journal.json"  # a write under way: finished or undone by the next start
LEGACY_JOURNAL_FILE = "rename.json"  # a rename under way, as versions before 0.3 wrote it

HISTORY_KEEP_VERSIONS = 20  # per page: the last 20 versions, and every one younger than
HISTORY_KEEP_DAYS = 30  # 30 days, whichever keeps more

MAX_CONTENT_BYTES = 1024 * 1024  # a page written through the tools
MAX_FILE_BYTES = 20 * 1024 * 1024  # a page file on disk that is still indexed
# What one page may cost to index: its first 20 000 links go into the index and the graph,
# the rest are left out (logged, and listed by `lore doctor`), so a page of 200 000 links
# holds the index's write lock for about what an ordinary big page does.
MAX_PAGE_LINKS = 20_000
# A file this large that an outside program changed is parsed before the write lock is
# taken, so that other processes' saves do not wait (or fail "busy") while it is parsed.
PARSE_AHEAD_BYTES = 256 * 1024
MAX_NAME_CHARS = 1000
MAX_SEGMENT_CHARS = 200
MAX_QUERY_CHARS = 1000
MAX_CONTEXT_CHARS = 240  # a link's line, as backlinks show it

DEFAULT_MAX_RESULT_CHARS = 40_000  # about 10 000 tokens
MIN_RESULT_CHARS = 2_000
PAGE_ROWS = 500  # rows of a paged list one tool result holds at most (the size limit may cut)

BUSY_TIMEOUT_S = 30.0  # how long a write waits for another process's write lock


def _env_int(name: str, default: int) -> int:
    """A whole number from the environment variable `name`; `default` if unset or not one."""
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


# A pass over this many files or more (a first index, mostly) reads them in worker
# processes, which parse them while this process writes them to the index (and reads
# some itself when they fall behind). On two cores that makes a first index of 10k pages
# about a quarter quicker, but a worker's memory (about 60 MB) would take the server past
# 150 MB there.
# LORE_READER_PASS_FILES sets another threshold (the tests use a small one).
READER_PASS_FILES_ENV = "LORE_READER_PASS_FILES"
READER_PASS_FILES = _env_int(READER_PASS_FILES_ENV, 20_000)
# A pass over this many files or more gives SQLite a larger page cache, which a vault of a
# few thousand pages does not repay.
LARGE_PASS_FILES = 20_000
# The page cache of such a pass: at 100k pages, 16 MiB was as fast as 64 MiB or faster
# (its B-trees are written in order, but for FTS5's merges), for 50 MB less.
LARGE_PASS_CACHE_KIB = 16_384
# A pass that writes this many pages or more has the search index's segments merged
# after it, in the background (see `index.upkeep`): a search then reads one b-tree a
# term, not the dozen or more such a pass leaves.
MERGE_AFTER_PAGES = 1000


VAULT_ENV = "LORE_VAULT"
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
QUIET_LOGGERS = ("markdown_it", "watchdog", "asyncio")


def setup_logging(level: str) -> None:
    """Log to stderr (stdout belongs to the protocol) from `level` up."""
    name = level.upper()
    logging.basicConfig(stream=sys.stderr, level=name, format=LOG_FORMAT)
    logging.getLogger().setLevel(name)
    for chatty in QUIET_LOGGERS:  # their DEBUG output is per token or per event
        logging.getLogger(chatty).setLevel(max(logging.INFO, logging.getLevelName(name)))
