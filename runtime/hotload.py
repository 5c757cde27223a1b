"""Watchers of the daemon (watchfiles): the checkpoint folder, the config file, the problems folder.

Checkpoints: the trainer writes `step_N/` and, once every file is complete, a `STABLE` marker in
it. A step without STABLE is never loaded (it may be half written). The newest stable step beyond
the one in force is loaded into the policy server by a `Loader` picked by name
(`hotload.mode`):

    lora     vLLM runtime LoRA loading: POST <server>/v1/load_lora_adapter {lora_name, lora_path}
             (vLLM needs VLLM_ALLOW_RUNTIME_LORA_UPDATING=True); episodes then request the
             adapter by name; adapters beyond `keep_adapters` are unloaded.
    command  run an argv (e.g. a weight-update script); untested against vLLM.
    none     load nothing (the trainer updates the server itself); only the version advances.

Then the version is recorded in the store (`Store.record_policy`: reused when the trainer already recorded
that path) and the scheduler switches (`set_policy(version, model=adapter)`).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Protocol

import anyio
import httpx
import msgspec
import watchfiles

from runtime.config import HotloadConfig
from runtime.settings import server_root
from runtime.store import Store, StoreError

log = logging.getLogger("kagentd.hotload")
STABLE = "STABLE"
_STEP = re.compile(r"step_(\d+)")


class HotloadError(Exception):
    """A checkpoint could not be loaded into the policy server; the message says why."""


class HotloadStatus(msgspec.Struct, kw_only=True):
    """What /health reports about hot-loading."""

    checkpoints_dir: str | None
    """Watched folder (None: hot-loading off)."""
    mode: str
    """Loader in use."""
    step: int | None = None
    """Checkpoint step in force (None: the base policy)."""
    version: int | None = None
    """Policy version recorded for it."""
    adapter: str | None = None
    """Model name episodes request (lora mode)."""
    loaded: list[str] = msgspec.field(default_factory=list)
    """Adapters kept loaded, oldest first."""
    loaded_at: float | None = None
    """Unix time of the last successful load."""
    error: str | None = None
    """Last failure (None after a success)."""
    failed_steps: list[int] = msgspec.field(default_factory=list)
    """Steps given up on after `retries` attempts (a restart retries them)."""


class Loader(Protocol):
    """Puts a checkpoint into the policy server."""

    async def load(self, name: str, path: Path, step: int) -> None: ...
    async def unload(self, name: str) -> None: ...
    async def aclose(self) -> None: ...


class LoraLoader:
    """vLLM's runtime LoRA endpoints."""

    def __init__(self, server_url: str, *, api_key: str | None, timeout_s: float) -> None:
        self.server_url = server_url.rstrip("/")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key and api_key != "EMPTY" else {}
        self.client = httpx.AsyncClient(timeout=timeout_s, headers=headers)

    async def _post(self, path: str, body: dict[str, str], ok_when: str) -> None:
        url = f"{self.server_url}{path}"
        try:
            r = await self.client.post(url, json=body)
        except httpx.HTTPError as exc:
            raise HotloadError(f"POST {url}: {type(exc).__name__}: {exc}") from exc
        # vLLM answers 400 "... has already been loaded" when a restart finds the adapter in place.
        if r.status_code == 200 or (r.status_code == 400 and ok_when in r.text.lower()):
            return
        hint = (" (is the server started with --enable-lora and VLLM_ALLOW_RUNTIME_LORA_UPDATING=True?)"
                if r.status_code == 404 else "")
        raise HotloadError(f"POST {url} answered {r.status_code}: {r.text[:500]}{hint}")

    async def load(self, name: str, path: Path, step: int) -> None:
        await self._post("/v1/load_lora_adapter", {"lora_name": name, "lora_path": str(path)}, "already")

    async def unload(self, name: str) -> None:
        await self._post("/v1/unload_lora_adapter", {"lora_name": name}, "not found")

    async def aclose(self) -> None:
        await self.client.aclose()


class CommandLoader:
    """Runs `hotload.command` with {path}, {name}, {step} filled in; exit status 0 = loaded."""

    def __init__(self, argv: list[str], timeout_s: float) -> None:
        self.argv = argv
        self.timeout_s = timeout_s

    async def load(self, name: str, path: Path, step: int) -> None:
        argv = [a.replace("{path}", str(path)).replace("{name}", name).replace("{step}", str(step))
                for a in self.argv]
        try:
            with anyio.fail_after(self.timeout_s):
                proc = await anyio.run_process(argv, check=False)
        except TimeoutError:
            raise HotloadError(f"{argv[0]} took longer than {self.timeout_s:g} s") from None
        except OSError as exc:
            raise HotloadError(f"cannot run {argv[0]}: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr or b"").decode(errors="replace")[-500:]
            raise HotloadError(f"{' '.join(argv)} exited with {proc.returncode}: {tail}")

    async def unload(self, name: str) -> None:
        return None

    async def aclose(self) -> None:
        return None


class NoLoader:
    """The trainer updates the policy server itself."""

    async def load(self, name: str, path: Path, step: int) -> None:
        return None

    async def unload(self, name: str) -> None:
        return None

    async def aclose(self) -> None:
        return None


def make_loader(config: HotloadConfig, *, policy_base_url: str, api_key: str | None) -> Loader:
    if config.mode == "lora":
        return LoraLoader(config.server_url or server_root(policy_base_url), api_key=api_key,
                          timeout_s=config.timeout_seconds)
    if config.mode == "command":
        return CommandLoader(config.command, config.timeout_seconds)
    return NoLoader()


def stable_steps(folder: Path) -> list[tuple[int, Path]]:
    """(N, path) of every `step_N/` holding a STABLE marker, by N."""
    found = []
    try:
        entries = list(folder.iterdir())
    except FileNotFoundError:
        return []
    for entry in entries:
        m = _STEP.fullmatch(entry.name)
        if m and entry.is_dir() and (entry / STABLE).is_file():
            found.append((int(m[1]), entry.resolve()))
    return sorted(found)


SetPolicy = Callable[[int, str | None], None]


class Hotloader:
    """Loads new stable checkpoints and advances the policy version."""

    def __init__(self, config: HotloadConfig, *, loader: Loader, store: Store, set_policy: SetPolicy) -> None:
        self.config = config
        self.folder = Path(config.checkpoints_dir or ".").expanduser()
        self.loader = loader
        self.store = store
        self.set_policy = set_policy
        self.status = HotloadStatus(checkpoints_dir=config.checkpoints_dir, mode=config.mode)
        self._lock = anyio.Lock()

    async def check(self) -> None:
        """Load the newest stable step beyond the one in force (older new ones are skipped)."""
        async with self._lock:
            steps = [(n, p) for n, p in stable_steps(self.folder)
                     if (self.status.step is None or n > self.status.step) and n not in self.status.failed_steps]
            if steps:
                await self._load(*steps[-1])

    async def _load(self, step: int, path: Path) -> None:
        name = f"{self.config.adapter_prefix}-{step}"
        delay = 1.0
        for attempt in range(1, self.config.retries + 1):
            try:
                await self.loader.load(name, path, step)
                break
            except HotloadError as exc:
                self.status.error = f"step_{step} (attempt {attempt}/{self.config.retries}): {exc}"
                log.warning("hot-load failed: %s", self.status.error)
                if attempt == self.config.retries:
                    self.status.failed_steps.append(step)
                    return
                await anyio.sleep(delay)
                delay = min(delay * 2, 30.0)
        version = await self._record(path)
        adapter = name if self.config.mode == "lora" else None
        self.set_policy(version, adapter)
        self.status.step, self.status.version, self.status.adapter = step, version, adapter
        self.status.loaded_at, self.status.error = time.time(), None
        log.info("policy version %d: %s loaded from %s", version, name, path)
        if self.config.mode == "lora":
            await self._trim(name)

    async def _record(self, path: Path) -> int:
        """The version recorded for `path` (the trainer may have recorded it), else a new one."""
        try:
            return await self.store.record_policy(str(path))
        except StoreError as exc:
            raise HotloadError(f"could not record a policy version for {path}: {exc}") from exc

    async def _trim(self, name: str) -> None:
        loaded = [n for n in self.status.loaded if n != name] + [name]
        while len(loaded) > self.config.keep_adapters:
            old = loaded.pop(0)
            try:
                await self.loader.unload(old)
            except HotloadError as exc:
                log.warning("could not unload adapter %s: %s", old, exc)
        self.status.loaded = loaded

    async def run(self, stop: anyio.Event, *, debounce_ms: int = 500,
                  task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Initial scan, then one check per burst of events in the folder, until `stop` is set."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if not self.config.load_latest_on_start:
            existing = stable_steps(self.folder)
            self.status.step = existing[-1][0] if existing else None
        task_status.started()
        try:
            await self.check()
            async for _ in watch(self.folder, stop, debounce_ms=debounce_ms,
                                 only=lambda p: p.name == STABLE or _STEP.fullmatch(p.name) is not None):
                await self.check()
        finally:
            with anyio.CancelScope(shield=True):
                await self.loader.aclose()


async def watch(path: Path, stop: anyio.Event, *, debounce_ms: int, recursive: bool = True,
                only: Callable[[Path], bool] | None = None) -> AsyncIterator[set[Path]]:
    """Bursts of changed paths under `path` until `stop` is set (watchfiles.awatch, filtered)."""
    def keep(_change: watchfiles.Change, p: str) -> bool:
        return only is None or only(Path(p))
    async for changes in watchfiles.awatch(path, stop_event=stop, debounce=debounce_ms, step=50, watch_filter=keep,
                                           recursive=recursive, ignore_permission_denied=True):
        yield {Path(p) for _, p in changes}


async def watch_file(path: Path, stop: anyio.Event, on_change: Callable[[], Awaitable[None]], *,
                     debounce_ms: int) -> None:
    """Call `on_change` whenever `path` is written or replaced (its folder is watched, because
    editors save by renaming a new file over the old one)."""
    target = Path(await anyio.Path(path).resolve())
    async for _ in watch(target.parent, stop, debounce_ms=debounce_ms, recursive=False,
                         only=lambda p: p.name == target.name):
        await on_change()


async def watch_problems(folder: Path, stop: anyio.Event, on_change: Callable[[set[Path]], Awaitable[None]], *,
                         debounce_ms: int) -> None:
    """Call `on_change(paths)` for each burst of changes to *.py files under the problems folder."""
    async for paths in watch(folder, stop, debounce_ms=debounce_ms, only=lambda p: p.suffix == ".py"):
        await on_change(paths)
