"""Several vaults behind one server: which vault a call means is one of its arguments.

`Vaults` maps names to vault folders (`VaultSpec`), the first the default. A vault is
opened on the first call that names it, not at start-up: its index, its first index
pass (in a thread of its own; calls wait for it as for the default vault's), its
watcher, its history and audit log are its own. A vault that cannot be opened (its
folder gone, its index unwritable) fails the calls that name it, and only those; each
later call tries again, so a vault that comes back is served again.

A `Grant` is what a caller may reach: every vault, as writer, on stdio; over HTTP what
its bearer token says (a reader token writes nothing, a token for some vaults reaches
no other, whatever a request names). Where a grant lacks the default vault, a call that
names none goes to the first vault it has.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from lore_mcp import vault_ops as engine
from lore_mcp.errors import InvalidArgumentError, LoreError, VaultBusyError, VaultError
from lore_mcp.vault_ops import AppState

log = logging.getLogger(__name__)

# A vault's name is one word of letters, digits, `_`, `-` and `.`: it appears in tool
# arguments, resource URIs (`lore://NAME/page/...`) and token files.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]+")
RESERVED_NAMES = frozenset({"page"})  # `lore://page/...` is the default vault's page URI
Role = Literal["reader", "writer"]


class UnknownVaultError(InvalidArgumentError):
    """A call named a vault the server does not hold, or its caller may not reach."""

    def __init__(self, name: str, known: Sequence[str]) -> None:
        super().__init__(
            f"There is no vault {name!r} here. The vaults are: {', '.join(known)}; "
            "name one of them as `vault`, or leave it out for the default."
        )


def check_name(name: str) -> str:
    """`name` if it can name a vault, else an `InvalidArgumentError` saying what can."""
    if not _NAME.fullmatch(name) or name.lower() in RESERVED_NAMES:
        raise InvalidArgumentError(
            f"{name!r} cannot name a vault: a name is 1-64 letters, digits, '_', '-' or '.', "
            f"starting with a letter or digit, and not {', '.join(sorted(RESERVED_NAMES))}."
        )
    return name


def name_for_folder(folder: Path) -> str:
    """The name a vault given by its folder alone gets: the folder's name, its other
    characters made `-` (`My Notes` is `My-Notes`)."""
    name = _NOT_NAME.sub("-", folder.expanduser().resolve().name).strip("-._")[:64]
    if not name or name.lower() in RESERVED_NAMES:
        name = f"vault-{name}" if name else "vault"
    return name


@dataclass(frozen=True)
class VaultSpec:
    """One vault of a server: its name, its folder, whether it is served read-only."""

    name: str
    root: Path
    read_only: bool = False


@dataclass(frozen=True)
class Grant:
    """What a caller may reach: `vaults` (None: all) and whether it may write. `label`
    names it in the audit log (the token's label over HTTP)."""

    label: str | None = None
    vaults: frozenset[str] | None = None
    role: Role = "writer"

    def reaches(self, name: str) -> bool:
        return self.vaults is None or name in self.vaults


EVERYTHING = Grant()
NOTHING = Grant(label="none", vaults=frozenset(), role="reader")
GRANT_SCOPE_KEY = "lore.grant"  # where the HTTP door's bearer check leaves a token's grant


def grant_of(request: object) -> Grant:
    """What the caller of a request may reach, from the transport's request object. On
    stdio (and in memory: no request, no headers) the parent process owns the pipes:
    everything. Over HTTP, what the bearer check found the token may reach (see
    `bearer.BearerAuth`), never anything the request says; an HTTP request without it
    reaches nothing."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, dict) and isinstance(grant := scope.get(GRANT_SCOPE_KEY), Grant):
        return grant
    return EVERYTHING if getattr(request, "headers", None) is None else NOTHING


def checked(specs: Iterable[VaultSpec]) -> list[VaultSpec]:
    """`specs` as a list, refusing none at all and two of one name."""
    listed = list(specs)
    if not listed:
        raise InvalidArgumentError("No vault was given: a server needs at least one.")
    seen: dict[str, Path] = {}
    for spec in listed:
        check_name(spec.name)
        key = spec.name.lower()
        if key in seen:
            raise InvalidArgumentError(
                f"Two vaults are named {spec.name!r} ({seen[key]} and {spec.root}); give "
                "them names of their own with --vault NAME=PATH."
            )
        seen[key] = spec.root
    return listed


@dataclass(eq=False)
class _Slot:
    spec: VaultSpec
    state: AppState | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Vaults:
    """The vaults one server holds, by name, opened when first used (see the module's
    docstring). Thread-safe: calls run in worker threads."""

    def __init__(
        self,
        specs: Iterable[VaultSpec],
        *,
        watch: bool = False,
        readers: int = 0,
        opened: Mapping[str, AppState] | None = None,
    ) -> None:
        listed = checked(specs)
        self._slots = {spec.name: _Slot(spec, (opened or {}).get(spec.name)) for spec in listed}
        self._by_key = {name.lower(): name for name in self._slots}
        self.default = listed[0].name
        self.watch = watch
        self.readers = readers
        self.closed = threading.Event()  # set once every opened vault is closed
        self._stop = threading.Event()
        self._started = False
        self._workers: list[threading.Thread] = []
        self._lock = threading.Lock()

    @classmethod
    def of(cls, state: AppState, name: str | None = None, *, watch: bool = False) -> Vaults:
        """One vault, opened already (with `open_vault(root, scan=False)` or indexed)."""
        name = name or name_for_folder(state.root)
        spec = VaultSpec(name, state.root, state.read_only)
        return cls([spec], watch=watch, readers=state.readers, opened={name: state})

    @property
    def names(self) -> list[str]:
        return list(self._slots)

    def specs(self) -> list[VaultSpec]:
        return [slot.spec for slot in self._slots.values()]

    def spec(self, name: str | None, grant: Grant = EVERYTHING) -> VaultSpec:
        """The vault `name` means for `grant` (None: the default, or the first the grant
        reaches). A name it does not hold, or the grant does not reach, is unknown."""
        reachable = self.reachable(grant)
        if name is None or not name.strip():
            if not reachable:
                raise VaultError("This token reaches none of the vaults this server holds.")
            return self._slots[self.default if self.default in reachable else reachable[0]].spec
        found = self._by_key.get(name.strip().lower())
        if found is None or found not in reachable:
            raise UnknownVaultError(name, reachable)
        return self._slots[found].spec

    def reachable(self, grant: Grant = EVERYTHING) -> list[str]:
        return [name for name in self._slots if grant.reaches(name)]

    def is_open(self, name: str) -> bool:
        return self._slots[name].state is not None

    def opened(self, name: str | None = None) -> AppState | None:
        """The vault `name` (None: the default) if it is open already, else None: what
        `get` gives without waiting or doing any work (so a caller need not leave its
        event loop for it)."""
        return self._slots[self.spec(name).name].state

    def get(self, name: str | None = None) -> AppState:
        """The vault `name` (None: the default), opened now if it was not yet: its first
        index pass then runs in the background (calls wait for `ready`)."""
        slot = self._slots[self.spec(name).name]
        if slot.state is not None:
            return slot.state
        with slot.lock:
            if slot.state is None:
                if self.closed.is_set() or self._stop.is_set():
                    raise VaultError("The server is shutting down; the vault is closed.")
                slot.state = self._open(slot.spec)
                self._prepare_in_background(slot.state)
        return slot.state

    def _open(self, spec: VaultSpec) -> AppState:
        try:
            return engine.open_vault(
                spec.root, scan=False, read_only=spec.read_only, readers=self.readers
            )
        except LoreError as exc:
            raise VaultError(f"The vault {spec.name!r} cannot be opened: {exc}") from exc
        except OSError as exc:
            raise VaultError(
                f"The vault {spec.name!r} cannot be opened ({spec.root}): {exc.strerror or exc}."
            ) from exc

    def start(self) -> None:
        """Begin serving: the vaults opened already are indexed and watched in the
        background, and the default vault is opened (the others wait for a call). A
        default vault that cannot be opened is logged; its calls fail with the reason."""
        with self._lock:
            self._started = True
            opened = [slot.state for slot in self._slots.values() if slot.state is not None]
        for state in opened:
            self._prepare_in_background(state)
        try:
            self.get(self.default)
        except LoreError as exc:
            log.error("%s", exc)

    def _prepare_in_background(self, state: AppState) -> None:
        with self._lock:
            name = f"lore-index {state.root}"
            if not self._started or any(w.name == name for w in self._workers):
                return
            worker = threading.Thread(
                target=prepare, args=(state, self.watch, self._stop), name=name, daemon=True
            )
            self._workers.append(worker)
        worker.start()

    def close(self) -> None:
        """Stop the index passes and watchers and close every vault opened."""
        self._stop.set()
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.join()
        for slot in self._slots.values():
            with slot.lock:
                if slot.state is not None:
                    slot.state.close()
                    log.info("closed the vault %s", slot.state.root)
        self.closed.set()

    def page_counts(self) -> dict[str, str]:
        """Each vault's size as instructions tell it: the pages of an open and indexed
        vault, else the count at its last index, read from the index file alone."""
        sizes = {}
        for name, slot in self._slots.items():
            state = slot.state
            if state is not None and state.ready.is_set():
                sizes[name] = f"{len(state.pages)} pages"
            elif (count := engine.last_index_count(slot.spec.root)) is not None:
                sizes[name] = f"{count} pages at its last index"
            else:
                sizes[name] = "not indexed yet"
        return sizes


class _Stopped(Exception):
    """The server is shutting down, so the index pass gives up (its transaction rolls back)."""


def prepare(vault: AppState, watch: bool, stop: threading.Event) -> None:
    """Start the watcher, then bring the index up to date (calls wait for `vault.ready`),
    waiting as long as it takes while another process writes the index."""
    if watch:
        from lore_mcp.watcher import start_watcher  # watchdog loads only when watching

        try:
            start_watcher(vault)
        except Exception:
            log.exception("file watching is off: the watcher failed to start")
    if vault.ready.is_set():
        return

    def check_stop(done: int, total: int) -> None:
        vault.indexed = (done, total)  # what a call waiting for the pass reports
        if stop.is_set():
            raise _Stopped

    def until_stopped(_waited: float) -> bool:  # another process writes the index
        return not stop.is_set()

    try:
        engine.index_vault(vault, progress=check_stop, patience=until_stopped)
    except (_Stopped, VaultBusyError):
        log.info("indexing stopped: the server is shutting down")
    except Exception:
        log.exception("indexing %s failed; serving what the index already holds", vault.root)
