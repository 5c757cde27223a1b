"""The daemon (`kagentd run`): its one task group (store, scheduler, HTTP server, watchers) and its
graceful stop. runtime/kagentd_cli.py is the command line around it."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import msgspec
import uvicorn

from runtime.config import Config, ConfigError, Paths, changed, load_config, reloadable
from runtime.daemon_files import DaemonInfo, remove_own, write_atomic
from runtime.hotload import Hotloader, make_loader, watch_file, watch_problems
from runtime.policy import Policy, make_policy
from runtime.scheduler import Scheduler
from runtime.server import ServerState, bind, make_app, serve, url_of
from runtime.store import Store
from skills.evaluator.launch import sweep_scratch

log = logging.getLogger("kagentd")


class ConfigStatus(msgspec.Struct, kw_only=True):
    """What /health says about the config file."""

    file: str | None
    """The file in use (None: defaults, env and flags only)."""
    reloaded_at: float | None = None
    """Unix time of the last successful reload."""
    applied: list[str] = msgspec.field(default_factory=list)
    """Settings the last reload changed live."""
    restart_needed: list[str] = msgspec.field(default_factory=list)
    """Changed settings that only a restart applies."""
    error: str | None = None
    """Why the last reload failed (the old settings stay in force)."""


class Daemon:
    """One run of kagentd."""

    def __init__(self, config: Config, *, config_path: Path | None, overrides: list[str], paths: Paths,
                 log_file: str | None = None) -> None:
        self.config = config
        self.config_path = config_path
        self.overrides = overrides
        self.paths = paths
        self.log_file = log_file
        self.config_status = ConfigStatus(file=str(config_path) if config_path else None)
        self.stop = anyio.Event()
        self.url = ""
        self.hotloader: Hotloader | None = None
        self.state: ServerState | None = None

    async def run(self) -> None:
        for folder in (self.paths.state_dir, self.paths.db.parent):
            folder.mkdir(parents=True, exist_ok=True)
        self.paths.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)  # the pid file: owner only
        # scratch folders of evaluations whose process was killed (a kagentd stopped by SIGKILL)
        removed = await anyio.to_thread.run_sync(sweep_scratch)
        if removed:
            log.info("removed %d evaluation scratch folder(s) whose process is gone: %s", len(removed),
                     ", ".join(p.name for p in removed[:5]) + (" ..." if len(removed) > 5 else ""))
        # Signals are caught from here on, so a SIGTERM during start-up also stops gracefully.
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async with Store.open(self.paths.db) as store:
                sock = bind(self.config.http.host, self.config.http.port)
                policy = make_policy(self.config.policy)
                try:
                    await self._serve(store, policy, sock, signals)
                finally:
                    with anyio.CancelScope(shield=True):
                        await policy.aclose()
                    sock.close()
                    remove_own(self.paths)
        log.info("kagentd stopped")

    async def _serve(self, store: Store, policy: Policy, sock: Any, signals: Any) -> None:
        scheduler = Scheduler(config=self.config.scheduler, store=store, policy=policy, ray=self.config.ray)
        self.state = state = ServerState(service=scheduler, store=store, http=self.config.http, extra=self._health)
        served = anyio.Event()

        async def http(*, task_status: anyio.abc.TaskStatus[uvicorn.Server]) -> None:
            try:
                await serve(make_app(state), sock, grace_s=3.0, task_status=task_status)
            finally:
                served.set()
        async with anyio.create_task_group() as tg:
            await tg.start(scheduler.run)
            server: uvicorn.Server = await tg.start(http)
            self.url = url_of(sock)
            self._write_files()
            log.info("kagentd ready: pid %d, %s, store %s", os.getpid(), self.url, store.path)
            await self._start_watchers(tg, store, scheduler)
            async for signum in signals:
                if signum == signal.SIGHUP:
                    await self.reload()
                    continue
                log.info("%s: stopping (grace %g s; a second signal skips the wait)", signal.Signals(signum).name,
                         self.config.daemon.grace_seconds)
                break
            force = anyio.Event()
            tg.start_soon(self._second_signal, signals, force)
            await self._drain(state, scheduler, force)
            self.stop.set()
            server.should_exit = True
            with anyio.move_on_after(5):
                await served.wait()
            tg.cancel_scope.cancel()  # the scheduler: rollouts still running are cancelled and marked

    def _write_files(self) -> None:
        info = DaemonInfo(pid=os.getpid(), url=self.url, db=str(self.paths.db.resolve()),
                          config=str(self.config_path) if self.config_path else None, log=self.log_file,
                          started=time.time())
        write_atomic(self.paths.info_file, msgspec.json.encode(info))
        write_atomic(self.paths.pid_file, f"{os.getpid()}\n".encode())

    async def _start_watchers(self, tg: anyio.abc.TaskGroup, store: Store, scheduler: Scheduler) -> None:
        cfg = self.config
        if cfg.hotload.checkpoints_dir:
            loader = make_loader(cfg.hotload, policy_base_url=cfg.policy.base_url, api_key=cfg.policy.api_key)
            hot = self.hotloader = Hotloader(cfg.hotload, loader=loader, store=store,
                                             set_policy=lambda v, m: scheduler.set_policy(v, model=m))
            await tg.start(self._guarded, "checkpoint watcher",
                           lambda: hot.run(self.stop, debounce_ms=cfg.watch.debounce_ms))
        if cfg.watch.config and self.config_path is not None:
            path = self.config_path
            tg.start_soon(self._guarded, "config watcher",
                          lambda: watch_file(path, self.stop, self.reload, debounce_ms=cfg.watch.debounce_ms))
        problems = Path(cfg.scheduler.problems_dir)
        if cfg.watch.problems and await anyio.Path(problems).is_dir():
            async def on_problems(paths: set[Path]) -> None:
                n = await scheduler.reload_problems()
                log.info("problems changed (%d files): %d problems in %s", len(paths), n, problems)
            tg.start_soon(self._guarded, "problems watcher",
                          lambda: watch_problems(problems, self.stop, on_problems, debounce_ms=cfg.watch.debounce_ms))

    async def _guarded(self, what: str, fn: Any, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """A watcher that fails is logged and reported, never takes the daemon down."""
        task_status.started()
        try:
            await fn()
        except Exception:
            log.exception("%s failed; it is off until the daemon restarts", what)

    async def _second_signal(self, signals: Any, force: anyio.Event) -> None:
        async for signum in signals:
            if signum != signal.SIGHUP:
                log.warning("%s again: cancelling running episodes now", signal.Signals(signum).name)
                force.set()

    async def _drain(self, state: ServerState, scheduler: Scheduler, force: anyio.Event) -> None:
        """Stop taking work, give running episodes `grace_seconds`, then cancel requests left."""
        state.draining = True
        scheduler.drain()  # requests already running go on; those waiting for room end now
        grace = self.config.daemon.grace_seconds
        with anyio.move_on_after(grace) as waited:
            async with anyio.create_task_group() as tg:
                async def forced() -> None:
                    await force.wait()
                    tg.cancel_scope.cancel()
                tg.start_soon(forced)
                await scheduler.wait_idle()
                tg.cancel_scope.cancel()
        left = scheduler.status().running
        if waited.cancelled_caught and left:
            log.warning("grace period of %g s over: cancelling %d running episodes", grace, left)
        await state.end_requests()

    def _health(self) -> dict[str, Any]:
        return {"url": self.url, "log": self.log_file, "config": msgspec.to_builtins(self.config_status),
                "hotload": msgspec.to_builtins(self.hotloader.status) if self.hotloader else None}

    async def reload(self) -> None:
        """Re-read the config file; apply what can change live, list the rest."""
        if self.config_path is None:
            return
        try:
            new = await anyio.to_thread.run_sync(
                lambda: load_config(self.config_path, overrides=self.overrides))
        except ConfigError as exc:
            self.config_status.error = str(exc)
            log.error("config reload failed, old settings stay: %s", exc)
            return
        keys = changed(self.config, new)
        live = [k for k in keys if reloadable(k)]
        later = sorted(set(self.config_status.restart_needed) | {k for k in keys if not reloadable(k)})
        self._apply(new)
        self.config_status = ConfigStatus(file=str(self.config_path), reloaded_at=time.time(), applied=live,
                                          restart_needed=later)
        log.info("config reloaded: applied %s%s", ", ".join(live) or "nothing",
                 f"; need a restart: {', '.join(later)}" if later else "")

    def _apply(self, new: Config) -> None:
        old = self.config
        http = msgspec.structs.replace(new.http, host=old.http.host, port=old.http.port)
        daemon = msgspec.structs.replace(old.daemon, grace_seconds=new.daemon.grace_seconds,
                                         log_level=new.daemon.log_level)
        self.config = msgspec.structs.replace(old, http=http, daemon=daemon)
        if self.state is not None:
            self.state.http = http
        logging.getLogger().setLevel(daemon.log_level.upper())
