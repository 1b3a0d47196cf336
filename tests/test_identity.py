"""Every file is its own page: no write lands in another file, and nothing replaced is lost."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters

from conftest import write
from helpers import assert_matches_fresh, environment, fails, ok, page_slugs
from lore_mcp import vault_ops
from lore_mcp.cli import main as lore
from lore_mcp.errors import (
    ConflictError,
    LoreError,
    PageNotFoundError,
    VaultError,
)
from lore_mcp.server import build_server
from lore_mcp.slugs import new_file_path, parse_name, slug_from_path, slugify
from lore_mcp.vault_ops import AppState, journal
from lore_mcp.vault_ops import files as page_files


def files(root: Path) -> dict[str, bytes]:
    """Every page file of the vault, by path, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*.md"))
        if not p.relative_to(root).as_posix().startswith(".")
    }


@pytest.mark.parametrize(
    ("name", "slug"),
    [
        ("C++", "c++"),
        ("C", "c"),
        ("v1.1.0", "v1.1.0"),
        ("v1.10", "v1.10"),
        ("🚀 Launch", "🚀-launch"),
        ("My Page_1", "my-page-1"),
        ("Q: Why is the sky blue?", "q-why-is-the-sky-blue"),
        ("a [b] #c ^d |e", "a-b-c-d-e"),
        ("Ünïcode Ω", "ünïcode-ω"),
        ("Node.js", "node.js"),
    ],
)
def test_a_slug_keeps_what_a_file_name_may_hold(name: str, slug: str) -> None:
    assert slugify(name) == slug
    if any(char in name for char in ":[]#^|"):
        return  # no new file may be so named (see test_hardening)
    # A new page's file is named as given, so its slug is the name's.
    assert slug_from_path(new_file_path(parse_name(name))) == parse_name(name).key.fold


# -- the reproductions ------------------------------------------------------------------


@pytest.fixture
def reproductions(vault_dir: Path) -> Path:
    write(vault_dir, "C++.md", "C plus plus\n")
    write(vault_dir, "🚀 Launch.md", "rocket\n")
    write(vault_dir, "Release notes/v1.1.0.md", "one one zero\n")
    write(vault_dir, "Release notes/v1.10.md", "one ten\n")
    write(vault_dir, "User interface/Settings.md", "ui settings\n")
    write(vault_dir, "Projects/Alpha.md", "alpha\n")
    write(vault_dir, "Questions.md", "See [[Q: Why is the sky blue]] and [[projects/beta]].\n")
    return vault_dir


@pytest.fixture
async def client(reproductions: Path) -> AsyncIterator[Client]:
    async with Client(build_server(vault_ops.open_vault(reproductions, scan=False))) as c:
        yield c


pytestmark = pytest.mark.anyio


async def test_names_that_used_to_fold_together_are_distinct_pages(
    client: Client, reproductions: Path
) -> None:
    saved = await ok(client, "save_page", slug="C", content="just C\n")
    assert (saved["path"], saved["created"]) == ("C.md", True)
    saved = await ok(client, "save_page", slug="Launch", content="plain launch\n")
    assert saved["path"] == "Launch.md"
    assert (reproductions / "C++.md").read_text() == "C plus plus\n"
    assert (reproductions / "🚀 Launch.md").read_text() == "rocket\n"
    for name, text in [("C", "just C\n"), ("C++", "C plus plus\n"), ("🚀 Launch", "rocket\n")]:
        assert (await ok(client, "read_page", slug=name))["content"] == text


async def test_release_notes_with_dotted_names_are_read_saved_and_deleted_by_name(
    client: Client, reproductions: Path
) -> None:
    assert (await ok(client, "read_page", slug="v1.10.md"))["content"] == "one ten\n"
    assert (await ok(client, "read_page", slug="v1.1.0"))["content"] == "one one zero\n"
    await ok(client, "save_page", slug="v1.10", content="ten, edited\n")
    assert (reproductions / "Release notes/v1.1.0.md").read_text() == "one one zero\n"
    assert (reproductions / "Release notes/v1.10.md").read_text() == "ten, edited\n"
    await ok(client, "delete_page", slug="Release notes/v1.10.md")
    assert (reproductions / "Release notes/v1.1.0.md").exists()
    assert not (reproductions / "Release notes/v1.10.md").exists()


async def test_explicit_paths_mean_exactly_that_place(client: Client, reproductions: Path) -> None:
    for name in ("./Settings", "Settings.md", "/Settings"):
        saved = await ok(client, "save_page", slug=name, content=f"{name}\n")
        assert saved["path"] == "Settings.md"
    assert (reproductions / "User interface/Settings.md").read_text() == "ui settings\n"
    saved = await ok(client, "save_page", slug="projects/New Page", content="np\n")
    assert saved["path"] == "Projects/New Page.md"  # the folder as it is spelled on disk
    assert not (reproductions / "projects").exists() or (reproductions / "projects").samefile(
        reproductions / "Projects"
    )


async def test_a_bare_name_overwrites_the_one_page_of_that_name(
    client: Client, reproductions: Path
) -> None:
    saved = await ok(client, "save_page", slug="Settings", content="bare\n")
    assert saved["path"] == "User interface/Settings.md"


async def test_placeholders_fill_by_their_own_slug_under_a_safe_file_name(
    client: Client, reproductions: Path
) -> None:
    saved = await ok(client, "save_page", slug="Q: Why is the sky blue", content="Rayleigh.\n")
    assert (saved["path"], saved["promoted"]) == ("Q Why is the sky blue.md", True)
    saved = await ok(client, "save_page", slug="Beta", content="root beta\n")
    assert (saved["path"], saved["promoted"]) == ("Beta.md", False)
    graph = await ok(client, "get_graph")
    assert [u["slug"] for u in graph["shape"]["unresolved"]] == ["projects/beta"]
    saved = await ok(client, "save_page", slug="projects/beta", content="the beta\n")
    assert (saved["path"], saved["promoted"]) == ("Projects/beta.md", True)


async def test_a_colon_is_no_new_name_and_a_drive_is_refused(client: Client) -> None:
    for name in ("Q: x", "Re: x"):
        assert "Obsidian does not allow :" in await fails(
            client, "save_page", slug=name, content="x\n"
        )

    for drive in ("C:\\notes\\x", "C:/notes/x", "\\\\server\\share\\x"):
        assert "path on this machine" in await fails(client, "save_page", slug=drive, content="x")


# -- collisions -------------------------------------------------------------------------


def test_files_whose_slugs_collide_each_stay_readable_and_writable(vault_dir: Path) -> None:
    write(vault_dir, "My Page.md", "spaces\n")
    write(vault_dir, "my-page.md", "dashes\n")
    write(vault_dir, "my_page.md", "underscores\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        # each name is the exact path of one file, and reaches that file alone
        for name, text in [
            ("my-page", "dashes\n"),
            ("my page", "spaces\n"),
            ("my_page", "underscores\n"),
        ]:
            page = vault_ops.read_page(opened, name)
            assert (page.content, page.matched_by, page.alternatives) == (text, "path", [])
        # no file has the slug as its handle: each is named by its path
        assert sorted(page_slugs(opened)) == ["My Page.md", "my-page.md", "my_page.md"]
        vault_ops.save_page(opened, "my_page.md", "underscores, edited\n")
        assert (vault_dir / "my_page.md").read_text() == "underscores, edited\n"
        assert (vault_dir / "My Page.md").read_text() == "spaces\n"
        vault_ops.delete_page(opened, "my-page.md")
        assert sorted(files(vault_dir)) == ["My Page.md", "my_page.md"]
        assert_matches_fresh(opened)
    finally:
        opened.close()


# -- nothing overwritten is lost ----------------------------------------------------------


def test_every_replaced_version_is_kept_and_restores_byte_for_byte(
    vault_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    versions = [b"\xef\xbb\xbffirst\r\n", b"second\n", b"third, not UTF-8: \xff\n"]
    (vault_dir / "Note.md").write_bytes(versions[0])
    opened = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.save_page(opened, "Note", versions[1].decode())
        vault_ops.save_page(opened, "Note", "fourth\n")
        (vault_dir / "Note.md").write_bytes(versions[2])  # an outside edit, not kept
        vault_ops.delete_page(opened, "Note")
        kept = vault_ops.page_history(opened, "Note")
    finally:
        opened.close()
    assert [v.tool for v in kept.versions] == ["delete_page", "save_page", "save_page"]
    assert [v.hash for v in kept.versions] == [
        hashlib.sha256(data).hexdigest() for data in (versions[2], versions[1], versions[0])
    ]
    assert lore(["history", "Note", "--vault", str(vault_dir)]) == 0
    assert "3 kept versions" in capsys.readouterr().out
    assert lore(["restore", "Note", "--version", "3", "--vault", str(vault_dir)]) == 0
    assert (vault_dir / "Note.md").read_bytes() == versions[0]
    assert lore(["restore", "Note", "--vault", str(vault_dir)]) == 0  # the newest: the delete's
    assert (vault_dir / "Note.md").read_bytes() == versions[2]
    opened = vault_ops.open_vault(vault_dir)
    try:  # each restore kept what it replaced, in turn
        assert len(vault_ops.page_history(opened, "Note").versions) == 4
        assert_matches_fresh(opened)
    finally:
        opened.close()


def test_kept_versions_stay_as_they_were_when_page_files_are_edited_in_place(
    vault_dir: Path,
) -> None:
    (vault_dir / "Note.md").write_bytes(b"first\n")
    os.link(vault_dir / "Note.md", vault_dir / "Twin.md")  # one file with two names
    (vault_dir / "Solo.md").write_bytes(b"solo, first\n")
    opened = vault_ops.open_vault(vault_dir)
    try:
        vault_ops.save_page(opened, "Note", "second\n")
        vault_ops.save_page(opened, "Solo", "solo, second\n")
        for name in ("Twin.md", "Solo.md"):  # as editors that write in place do
            with (vault_dir / name).open("r+b") as handle:
                handle.write(b"EDITED")
        note, solo = (vault_ops.page_history(opened, name).versions for name in ("Note", "Solo"))
    finally:
        opened.close()
    assert [(vault_dir / v.kept).read_bytes() for v in note] == [b"first\n"]
    assert [(vault_dir / v.kept).read_bytes() for v in solo] == [b"solo, first\n"]
    assert (vault_dir / "Twin.md").read_bytes() == b"EDITED"  # the second name: one file


def test_a_write_that_fails_leaves_no_kept_version_behind(
    vault_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (vault_dir / "Note.md").write_bytes(b"note\n")
    (vault_dir / "Hub.md").write_bytes(b"see [[Note]]\n")
    opened = vault_ops.open_vault(vault_dir)
    try:

        def disk_full(path: Path, data: bytes) -> None:
            raise VaultError(f"Cannot write {path.name!r}: No space left on device.")

        monkeypatch.setattr(page_files, "atomic_write", disk_full)  # a page's file
        monkeypatch.setattr(journal, "atomic_write", disk_full)  # a rename's record
        with pytest.raises(VaultError, match="No space left"):
            vault_ops.save_page(opened, "Note", "changed\n")
        with pytest.raises(VaultError, match="No space left"):
            vault_ops.rename_page(opened, "Note", "Renamed")
        left = [vault_ops.page_history(opened, name).versions for name in ("Note", "Hub")]
    finally:
        opened.close()
    assert left == [[], []]
    assert (vault_dir / "Note.md").read_bytes() == b"note\n"
    assert (vault_dir / "Hub.md").read_bytes() == b"see [[Note]]\n"


def test_a_stale_write_is_refused_and_changes_nothing(state: AppState, vault_dir: Path) -> None:
    first = vault_ops.save_page(state, "Shared", "one\n")
    assert first.hash == vault_ops.read_page(state, "Shared").hash
    vault_ops.save_page(state, "Shared", "two, by another agent\n", expected_hash=first.hash)
    for write_it in (
        lambda: vault_ops.save_page(state, "Shared", "three\n", expected_hash=first.hash),
        lambda: vault_ops.delete_page(state, "Shared", expected_hash=first.hash),
        lambda: vault_ops.rename_page(state, "Shared", "Moved", expected_hash=first.hash),
    ):
        with pytest.raises(ConflictError) as refused:
            write_it()
        assert refused.value.current == hashlib.sha256(b"two, by another agent\n").hexdigest()
    assert files(vault_dir) == {"Shared.md": b"two, by another agent\n"}


def test_unknown_names_are_never_written_by_a_loose_match(state: AppState, vault_dir: Path) -> None:
    write(vault_dir, "C++.md", "plus\n")
    vault_ops.index_vault(state)
    with pytest.raises(PageNotFoundError, match="c\\+\\+"):  # suggested, never used
        vault_ops.read_page(state, "C")
    with pytest.raises(PageNotFoundError):
        vault_ops.delete_page(state, "C")

    assert files(vault_dir) == {"C++.md": b"plus\n"}


# -- the property: a write changes only what it names --------------------------------------

NAMES = [
    "Note",
    "note",
    "NOTE",
    "No te",
    "no_te",
    "no-te",
    "C",
    "C++",
    "C#",
    "v1.1",
    "v1.10",
    "v11",
    "a/Note",
    "A/note",
    "b/Note",
    "./Note",
    "Note.md",
    "/a/Note",
    "🚀 Note",
    "Q: Note",
]
PATHS = [
    "Note.md",
    "no_te.md",
    "C++.md",
    "C.md",
    "v1.1.md",
    "v1.10.md",
    "a/Note.md",
    "b/note.md",
    "A/other.md",
    "🚀 Note.md",
]


def _kept_hashes(opened: AppState, rel: str) -> set[str]:
    from lore_mcp.vault_ops import history

    return {v.hash(opened.root) for v in history.versions(opened.root, rel)}


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    initial=st.lists(st.sampled_from(PATHS), unique=True, max_size=6),
    links=st.lists(st.sampled_from(NAMES), max_size=4),
    operations=st.lists(
        st.tuples(
            st.sampled_from(["save", "delete", "rename"]),
            st.sampled_from(NAMES),
            st.sampled_from(NAMES),
        ),
        min_size=1,
        max_size=6,
    ),
)
@pytest.mark.slow
def test_no_write_changes_a_file_it_does_not_name(
    initial: list[str], links: list[str], operations: list[tuple[str, str, str]]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n, rel in enumerate(initial):
            body = " ".join(f"[[{target}]]" for target in links[n % 2 :: 2])
            write(root, rel, f"# {rel}\n{body}\n")
        opened = vault_ops.open_vault(root)
        try:
            for number, (kind, name, other) in enumerate(operations):
                before = files(root)
                try:
                    if kind == "save":
                        result = vault_ops.save_page(
                            opened, name, f"version {number}\n[[{other}]]\n"
                        )
                        allowed = {result.path}
                    elif kind == "delete":
                        gone = vault_ops.delete_page(opened, name)
                        allowed = {gone.path}
                    else:
                        moved = vault_ops.rename_page(opened, name, other)
                        rewritten = {
                            vault_ops.read_page(opened, slug).path or "" for slug in moved.rewritten
                        }
                        allowed = {vault_ops.read_page(opened, moved.slug).path or "", *rewritten}
                        allowed |= {p for p in before if slug_from_path(p) == moved.old_slug}
                except LoreError:
                    assert files(root) == before, f"a refused {kind} of {name!r} changed files"
                    continue
                after = files(root)
                changed = {p for p in before.keys() | after.keys() if before.get(p) != after.get(p)}
                assert changed <= allowed, f"{kind} {name!r} {other!r} changed {changed - allowed}"
                for rel in changed & before.keys():
                    replaced = before[rel]
                    if rel not in after and replaced in after.values():
                        continue  # a rename moved it, unchanged
                    # the history of a renamed page moved with it
                    kept_at = moved.path if kind == "rename" and rel not in after else rel
                    assert hashlib.sha256(replaced).hexdigest() in _kept_hashes(opened, kept_at)
            assert_matches_fresh(opened)
        finally:
            opened.close()


# -- a rename is all or nothing ---------------------------------------------------------------

RENAMER = """
import sys
from lore_mcp import vault_ops
opened = vault_ops.open_vault(sys.argv[1])
print("ready", flush=True)
vault_ops.rename_page(opened, "Hub", "Renamed Hub")
print("done", flush=True)
"""


@pytest.mark.slow
def test_a_rename_killed_at_any_moment_is_whole_after_the_next_start(tmp_path: Path) -> None:
    rng = random.Random(20)
    outcomes: set[str] = set()
    for run in range(20):
        root = tmp_path / f"v{run}"
        write(root, "Hub.md", "# Hub\nSee [[Spoke 0]].\n")
        for n in range(50):
            write(root, f"spokes/Spoke {n}.md", f"Back to [[Hub]] and [[Hub|the hub]], line {n}.\n")
        vault_ops.open_vault(root).close()  # indexed before, as a running vault is
        proc = subprocess.Popen(
            [sys.executable, "-c", RENAMER, str(root)],
            stdout=subprocess.PIPE,
            env=environment(),
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0, 0.25))
        proc.kill()
        proc.wait()
        proc.stdout.close()
        opened = vault_ops.open_vault(root)  # the next start
        try:
            spokes = [(root / f"spokes/Spoke {n}.md").read_text() for n in range(50)]
            if (root / "Hub.md").exists():
                assert not (root / "Renamed Hub.md").exists()
                assert all("[[Hub]]" in s and "[[Hub|the hub]]" in s for s in spokes)
                outcomes.add("not renamed")
            else:
                assert (root / "Renamed Hub.md").read_text() == "# Hub\nSee [[Spoke 0]].\n"
                assert all(
                    "[[Renamed Hub]]" in s and "[[Renamed Hub|the hub]]" in s for s in spokes
                )
                outcomes.add("renamed")
            assert_matches_fresh(opened)
        finally:
            opened.close()
    assert outcomes  # both outcomes are fine; a half-renamed vault fails above


@pytest.mark.slow
async def test_a_stale_write_is_refused_over_stdio(vault_dir: Path) -> None:
    write(vault_dir, "Shared.md", "one\n")
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lore_mcp", "--vault", str(vault_dir), "--no-watch"],
        env=environment(),
    )
    with anyio.fail_after(60):
        async with Client(server) as first, Client(server) as second:
            seen = (await ok(first, "read_page", slug="Shared"))["hash"]
            await ok(second, "save_page", slug="Shared", content="two\n", expected_hash=seen)
            refused = await fails(
                first, "save_page", slug="Shared", content="three\n", expected_hash=seen
            )
            assert "changed since you read it" in refused
            assert "changed since you read it" in await fails(
                first, "delete_page", slug="Shared", expected_hash=seen
            )
    assert (vault_dir / "Shared.md").read_text() == "two\n"
