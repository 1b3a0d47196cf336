"""Page files on disk: reading many at once, and temp files left by killed writes."""

from __future__ import annotations

import os
import time
from pathlib import Path

from lore_mcp import links
from lore_mcp.index import LinkRow
from lore_mcp.vault_ops import files, pagefile


def test_page_links_skip_same_page_links_attachments_and_empty_targets() -> None:
    text = "[[#Intro]] ![[chart.png]] [[..]]\n  [[./Sub/Note|alias]] and [[Other#Part]]  \n"
    context = "[[./Sub/Note|alias]] and [[Other#Part]]"
    rows, keys = pagefile.page_links("folder/page", links.scan(text), None)
    assert rows == [
        LinkRow(
            "folder/page", "./Sub/Note", 2, context, "folder/sub/note", True, "folder/sub/note", ""
        ),
        LinkRow("folder/page", "Other", 2, context, "other", False, "other", ""),
    ]
    # Each with the key it resolves by, as a stored link's is made again.
    assert keys == [pagefile.link_key(row) for row in rows]
    assert [key.text for key in keys] == ["folder/Sub/Note", "Other"]


def test_parse_gives_the_row_the_text_and_the_links() -> None:
    data = "\ufeff# Hi [[There]]\n".encode()
    parsed = pagefile.parse("notes/My Page.md", data, len(data), 7)
    assert parsed.row.key == "notes/My Page.md" and parsed.row.title == "My Page"
    assert (parsed.row.path, parsed.row.size, parsed.row.mtime_ns) == (
        "notes/My Page.md",
        len(data),
        7,
    )
    assert parsed.row.hash == pagefile.content_hash(data) and len(parsed.row.hash) == 64
    assert not parsed.row.bad_utf8
    assert parsed.body == "# Hi [[There]]\n"  # without the byte-order mark
    assert [(k.target, k.line) for k in parsed.links] == [("There", 1)]
    assert pagefile.parse("b.md", b"caf\xe9", 4, 0).row.bad_utf8


def test_stale_temp_files_are_removed_and_fresh_ones_kept(vault_dir: Path) -> None:
    stale = vault_dir / ".lore-tmp-abc.md~"
    fresh = vault_dir / ".lore-tmp-def.md~"
    for path in (stale, fresh):
        path.write_text("half a page")
    hour_ago = time.time() - files.STALE_TEMP_SECONDS - 60
    os.utime(stale, (hour_ago, hour_ago))
    assert files.scan_files(vault_dir) == {}
    assert not stale.exists()
    assert fresh.exists()


def _seen(root: Path) -> dict[str, pagefile.Seen]:
    device = root.stat().st_dev
    return {rel: pagefile.Seen(stamp, device) for rel, stamp in files.scan_files(root).items()}


def test_a_file_a_pass_found_is_read_as_it_was_found(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("Inside [[b]].\n")
    seen = _seen(root)["notes/a.md"]
    fast = pagefile.read_page_file(root, "notes/a.md", seen=seen)
    assert fast is not None and fast == pagefile.read_page_file(root, "notes/a.md")
    assert fast.body == "Inside [[b]].\n"


def test_a_folder_made_a_symlink_out_after_the_pass_found_a_file_is_not_read_through(
    tmp_path: Path,
) -> None:
    root, outside = tmp_path / "vault", tmp_path / "outside"
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "a.md").write_text("Inside.\n")
    (outside / "notes").mkdir(parents=True)
    (outside / "notes" / "a.md").write_text("OUTSIDEWORD\n")
    seen = _seen(root)["notes/a.md"]
    (root / "notes").rename(root / "old")
    (root / "notes").symlink_to(outside / "notes", target_is_directory=True)
    assert pagefile.read_page_file(root.resolve(), "notes/a.md", seen=seen) is None


def test_a_file_replaced_after_the_pass_found_it_is_read_as_it_is_now(tmp_path: Path) -> None:
    root = tmp_path / "vault"
    root.mkdir()
    (root / "a.md").write_text("Before.\n")
    seen = _seen(root)["a.md"]
    (root / "b.md").write_text("After.\n")
    (root / "b.md").replace(root / "a.md")
    parsed = pagefile.read_page_file(root.resolve(), "a.md", seen=seen)
    assert parsed is not None and parsed.body == "After.\n"
