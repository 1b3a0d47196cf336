"""What a small change to a long page costs in characters on the wire:

    python bench/edits.py [--size 20000] [--json]

Through the real stdio server (`lore-mcp --vault TMP --no-watch`, spoken to line by
line), on a page of about `--size` characters: adding one line, by reading the page and
saving it whole (mode replace) or by one save with mode append; changing one sentence,
by reading and saving whole or by one save with mode edit. Counted are the characters
of the JSON-RPC lines the client sends and the server answers for those calls alone
(not the handshake). An edit needs the sentence it replaces, which the agent has from
an earlier read or a search hit; that read is not counted here. Nothing is timed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `python bench/edits.py` puts bench/, not the repo, first
    sys.path.insert(0, str(ROOT))

from bench.measure import server_env  # noqa: E402
from bench.rawrpc import RawServer, server_command  # noqa: E402

SLUG = "Design Notes"
NEW_LINE = "- 2025-06-01: chose append over a whole-page save for journal entries.\n"
SENTENCE = "Paragraph 7 explains why the index is only a cache of the files."
NEW_SENTENCE = "Paragraph 7 explains why the index is a cache, rebuilt from the files."


def long_page(size: int) -> str:
    """A page of about `size` characters: headed sections of linked prose."""
    sections: list[str] = ["# Design Notes\n\n"]
    number = 0
    while sum(map(len, sections)) < size:
        number += 1
        lead = SENTENCE if number == 7 else f"Paragraph {number} is about the vault."
        sections.append(
            f"## Section {number}\n\n{lead} It links to [[Topic {number % 17}]] and to "
            "[[Link Resolution]], and says how a memory server keeps pages, links and "
            "search in step when an agent writes, renames or deletes a page.\n\n"
        )
    return "".join(sections)


class CountingServer(RawServer):
    """A `RawServer` that counts the characters of the lines it sends and receives."""

    def __init__(self, command: list[str], env: dict[str, str], stderr: IO[str] | int) -> None:
        super().__init__(command, env, stderr)
        self.sent = self.received = 0
        assert self.process.stdout is not None
        self.process.stdout = _Counting(self.process.stdout, self)  # type: ignore[assignment]

    def _send(self, message: dict[str, Any]) -> None:
        self.sent += len(json.dumps(message, ensure_ascii=False)) + 1
        super()._send(message)

    def reset(self) -> None:
        self.sent = self.received = 0


class _Counting:
    """The server's stdout, counting the characters of each line read."""

    def __init__(self, stream: IO[bytes], counter: CountingServer) -> None:
        self._stream = stream
        self._counter = counter

    def readline(self) -> bytes:
        line = self._stream.readline()
        self._counter.received += len(line.decode("utf-8", errors="replace"))
        return line

    def close(self) -> None:
        self._stream.close()


@dataclass
class Way:
    """One way of making a change: its calls, and the characters each way they carried."""

    change: str
    way: str
    calls: str
    sent: int
    received: int


def measure(size: int) -> list[Way]:
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp)
        page = long_page(size)
        server = CountingServer(server_command(vault), server_env(), sys.stderr)
        try:
            server.initialize()
            return _ways(server, page)
        finally:
            server.close()


def _ways(server: CountingServer, page: str) -> list[Way]:
    found: list[Way] = []

    def way(change: str, name: str, calls: list[tuple[str, dict[str, Any]]]) -> None:
        server.call("save_page", {"slug": SLUG, "content": page})  # the page as it was
        server.reset()
        for tool, arguments in calls:
            result = server.call(tool, arguments)
            if result.get("isError"):
                raise RuntimeError(f"{tool} failed: {result['content'][0]['text']}")
        names = " + ".join(tool if "mode" not in a else f"{tool}({a['mode']})" for tool, a in calls)
        found.append(Way(change, name, names, server.sent, server.received))

    read = ("read_page", {"slug": SLUG})
    way("add one line", "replace", [read, _save(page + NEW_LINE)])
    way("add one line", "append", [_save(NEW_LINE, mode="append")])
    changed = page.replace(SENTENCE, NEW_SENTENCE)
    way("change one sentence", "replace", [read, _save(changed)])
    way(
        "change one sentence",
        "edit",
        [_save(NEW_SENTENCE, mode="edit", old_text=SENTENCE)],
    )
    return found


def _save(content: str, **options: str) -> tuple[str, dict[str, Any]]:
    return "save_page", {"slug": SLUG, "content": content, **options}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20_000, help="page size in characters")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    ways = measure(args.size)
    if args.json:
        print(json.dumps([asdict(w) for w in ways], indent=2))
        return 0
    print(f"A page of {len(long_page(args.size)):,} characters; characters on the wire:")
    print(f"{'change':<22}{'way':<9}{'sent':>8}{'received':>10}  calls")
    for w in ways:
        print(f"{w.change:<22}{w.way:<9}{w.sent:>8,}{w.received:>10,}  {w.calls}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
