"""`kagentd`: the long-running episode daemon (DESIGN §12).

    kagentd run    [--config FILE] [--set KEY=VALUE ...]   foreground; Ctrl-C / SIGTERM stops it gracefully
    kagentd start  [same options]                          detach, wait until /health answers, say where
    kagentd stop   [--timeout S]                           SIGTERM through the pid file, wait, report
    kagentd status [--json]                                episodes running/queued, slots, policy, throughput
    kagentd config [--print | --markdown | --check]        the effective configuration, with help

`run` opens the store (a second daemon on the same store is refused), starts the scheduler, the
HTTP server and the watchers in one task group, and writes the pid file and the info file (pid,
URL, store) into daemon.run_dir. SIGTERM/SIGINT: stop taking requests (503), let running
episodes finish for up to daemon.grace_seconds, then cancel what is left. SIGHUP reloads the
config file. The store commits whole transactions only, so no stop leaves a half-written row;
episodes cut short by a crash are marked `interrupted` and re-queued at the next start.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

from runtime.config import (
    Config,
    ConfigError,
    Paths,
    default_config_path,
    load_config,
    render_markdown,
    render_toml,
    resolve_paths,
)
from runtime.daemon_files import DaemonInfo, alive, read_info, running
from runtime.store import StoreError

NOT_RUNNING = 3  # LSB: "program is not running"


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _err(text: str) -> None:
    sys.stderr.write(f"kagentd: {text}\n")


# ---------------------------------------------------------------------------- arguments


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=None,
                   help="TOML config file (default: $KAGENT_CONFIG, else $XDG_CONFIG_HOME/kagent/kagentd.toml if present)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one setting, e.g. --set http.port=8080 (repeatable; beats file and env)")
    p.add_argument("--db", default=None, help="store file (same as --set daemon.db=PATH)")
    p.add_argument("--host", default=None, help="bind address (same as --set http.host=ADDR)")
    p.add_argument("--port", type=int, default=None, help="TCP port (same as --set http.port=N)")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kagentd", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    _common(sub.add_parser("run", help="run in the foreground"))
    _common(sub.add_parser("start", help="start detached; waits until /health answers"))
    p = sub.add_parser("stop", help="stop the running daemon gracefully (SIGTERM)")
    _common(p)
    p.add_argument("--timeout", type=float, default=None,
                   help="seconds to wait for it to exit (default: daemon.grace_seconds + 30)")
    p = sub.add_parser("status", help="what the running daemon is doing")
    _common(p)
    p.add_argument("--json", action="store_true", help="print /health as JSON")
    p.add_argument("--api-key", default=None,
                   help="bearer key for /health (default: $KAGENT_API_KEY, else http.api_key)")
    p = sub.add_parser("config", help="print the effective configuration with help")
    _common(p)
    p.add_argument("--print", action="store_true", help="print the effective configuration (the default)")
    p.add_argument("--markdown", action="store_true", help="the settings table of docs/config.md")
    p.add_argument("--check", action="store_true", help="only validate; exit 1 on errors")
    p.add_argument("--show-secrets", action="store_true", help="print api keys instead of ***")
    return ap


def overrides_of(args: argparse.Namespace) -> list[str]:
    extra = [f"daemon.db={json.dumps(str(Path(args.db).resolve()))}"] if args.db else []
    extra += [f"http.host={json.dumps(args.host)}"] if args.host else []
    extra += [f"http.port={args.port}"] if args.port is not None else []
    return [*args.overrides, *extra]


def config_path_of(args: argparse.Namespace) -> Path | None:
    path = args.config or default_config_path(os.environ)
    return path.resolve() if path is not None else None


def load(args: argparse.Namespace) -> tuple[Config, Path | None, Paths]:
    path = config_path_of(args)
    config = load_config(path, overrides=overrides_of(args))
    return config, path, resolve_paths(config.daemon)


# ------------------------------------------------------------------ asking the running daemon


def api_key_of(config: Config, given: str | None = None) -> str | None:
    """The bearer key a client sends: the flag, else $KAGENT_API_KEY, else http.api_key."""
    return given or os.environ.get("KAGENT_API_KEY") or config.http.api_key


def start_wait_s(config: Config) -> float:
    """How long `kagentd start` waits for /health: daemon.start_timeout_seconds, and with the ray
    executor at least ray.start_timeout_s + 30 s, since the daemon answers only once its actors are
    placed or given up on (giving up sooner reported a healthy, slowly placed cluster as a failure)."""
    wait = config.daemon.start_timeout_seconds
    if config.scheduler.executor == "ray":
        wait = max(wait, config.ray.start_timeout_s + 30.0)
    return wait


def health(url: str, key: str | None, timeout: float = 5.0) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    r = httpx.get(f"{url}/health", headers=headers, timeout=timeout)
    r.raise_for_status()
    data: dict[str, Any] = r.json()
    return data


# ------------------------------------------------------------------------------ commands


def cmd_run(args: argparse.Namespace) -> int:
    config, path, paths = load(args)
    logging.basicConfig(level=config.daemon.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("watchfiles", "httpx", "httpx2", "httpcore"):  # a line per file event / HTTP call
        logging.getLogger(noisy).setLevel(max(logging.WARNING, logging.getLogger().level))
    from runtime.daemon import Daemon  # heavy imports (torch, the skills) only for `run`

    other = running(paths)
    if other is not None and other != os.getpid():
        _err(f"another kagentd (pid {other}) is running with pid file {paths.pid_file}; "
             "stop it first (kagentd stop) or give this one its own daemon.run_dir")
        return 1
    daemon = Daemon(config, config_path=path, overrides=overrides_of(args), paths=paths,
                    log_file=os.environ.get("KAGENTD_LOG_FILE"))
    try:
        anyio.run(daemon.run)
    except StoreError as exc:  # StoreInUse: a second daemon on the same store
        _err(str(exc))
        return 1
    except (ConfigError, OSError) as exc:
        _err(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    return 0


def _start_cmd(args: argparse.Namespace, path: Path | None) -> list[str]:
    cmd = [sys.executable, "-m", "runtime.kagentd_cli", "run"]
    if path is not None:
        cmd += ["--config", str(path)]
    for item in overrides_of(args):
        cmd += ["--set", item]
    return cmd


def _log_tail(log: Path, lines: int = 20) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def cmd_start(args: argparse.Namespace) -> int:
    config, path, paths = load(args)
    pid = running(paths)
    if pid is not None:
        info = read_info(paths)
        _err(f"kagentd is already running (pid {pid}{', ' + info.url if info else ''}); `kagentd stop` first")
        return 1
    paths.state_dir.mkdir(parents=True, exist_ok=True)
    paths.run_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    paths.log_file.parent.mkdir(parents=True, exist_ok=True)
    begin = paths.log_file.stat().st_size if paths.log_file.exists() else 0
    with open(paths.log_file, "ab") as log:
        proc = subprocess.Popen(_start_cmd(args, path), stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True, env={**os.environ, "KAGENTD_LOG_FILE": str(paths.log_file)})
    wait_s = start_wait_s(config)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        code = proc.poll()
        if code is not None:
            tail = paths.log_file.read_bytes()[begin:].decode(errors="replace").strip()
            _err(f"kagentd exited during start-up (status {code}). Log {paths.log_file}:\n{tail[-3000:]}")
            return 1
        info = read_info(paths)
        if info is not None and info.pid == proc.pid:
            try:
                health(info.url, api_key_of(config), timeout=2.0)
            except httpx.HTTPStatusError:  # it answers (a 401: the key is elsewhere): it is up
                pass
            except httpx.HTTPError:
                time.sleep(0.1)
                continue
            else:
                _out(f"kagentd started: pid {proc.pid}, {info.url}\n  store {info.db}\n  log   {paths.log_file}"
                     f"\n  pid   {paths.pid_file}")
                return 0
        time.sleep(0.1)
    _err(f"kagentd (pid {proc.pid}) did not answer /health within {wait_s:g} s;"
         f" it may still be starting. Log {paths.log_file}:\n{_log_tail(paths.log_file)}")
    return 1


def cmd_stop(args: argparse.Namespace) -> int:
    config, _, paths = load(args)
    pid = running(paths)
    if pid is None:
        stale = paths.pid_file.exists()
        if stale:
            paths.pid_file.unlink(missing_ok=True)
            paths.info_file.unlink(missing_ok=True)
        _out(f"kagentd is not running (pid file {paths.pid_file}{' was stale; removed' if stale else ' absent'})")
        return 0
    timeout = args.timeout if args.timeout is not None else config.daemon.grace_seconds + 30
    began = time.monotonic()
    os.kill(pid, signal.SIGTERM)
    while time.monotonic() - began < timeout:
        if not alive(pid):
            _out(f"kagentd (pid {pid}) stopped in {time.monotonic() - began:.1f} s")
            return 0
        time.sleep(0.1)
    _err(f"kagentd (pid {pid}) is still running after {timeout:g} s (episodes finishing?); "
         f"`kill -9 {pid}` forces it: interrupted episodes are marked and re-queued at the next start")
    return 1


def _duration(seconds: float) -> str:
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s" if h else f"{m}m{s:02d}s"


def describe_health(h: dict[str, Any], info: DaemonInfo | None) -> list[str]:
    s = h.get("scheduler") or {}
    hot = h.get("hotload") or {}
    tps = s.get("turns_per_s")
    lines = [
        f"kagentd {h.get('status')}: pid {h.get('pid')}, {info.url if info else h.get('url')}, up {_duration(h.get('uptime_s', 0))}",
        f"  store      {h.get('db')}",
        f"  episodes   {s.get('running')} running, {s.get('queued')} queued, {s.get('finished')} finished"
        f" since start; throughput {'—' if tps is None else f'{tps:.2f}'} turns/s",
        f"  slots      {s.get('gpu_slots_busy')}/{s.get('gpu_slots_total')} busy ({s.get('executor', 'local')} executor)",
        f"  policy     version {s.get('policy_version')}, model {s.get('policy_model')}",
        f"  policy server: {'PROBLEM: ' + s['policy_error'] if s.get('policy_error') else 'ok'}",
        "  all episodes in the store: " + (", ".join(f"{n} {k}" for k, n in sorted(h.get("episodes", {}).items())) or "none"),
    ]
    for a in s.get("actors") or []:  # the ray executor's evaluation actors
        where = a["node"] + (f", GPU {a['device']}" if a.get("device") else "")
        lines.append(f"  actor      {a['name']} ({where}): {a['state']}, {a['evaluations']} evaluations"
                     + (f"; {a['error']}" if a.get("error") else ""))
    if hot.get("checkpoints_dir"):
        lines.append(f"  hot-load   {hot['mode']} from {hot['checkpoints_dir']}: step {hot.get('step')}"
                     + (f"; ERROR {hot['error']}" if hot.get("error") else ""))
    cfg = h.get("config") or {}
    if cfg.get("restart_needed"):
        lines.append(f"  config     changed settings need a restart: {', '.join(cfg['restart_needed'])}")
    if cfg.get("error"):
        lines.append(f"  config     last reload failed: {cfg['error']}")
    return lines


def cmd_status(args: argparse.Namespace) -> int:
    config, _, paths = load(args)
    pid = running(paths)
    if pid is None:
        _out(f"kagentd is not running (no live pid in {paths.pid_file}); start it with `kagentd start`")
        return NOT_RUNNING
    info = read_info(paths)
    if info is None:
        _err(f"kagentd (pid {pid}) is running but has not written {paths.info_file} yet (starting?)")
        return 1
    try:
        h = health(info.url, api_key_of(config, args.api_key))
    except httpx.HTTPStatusError as exc:
        if exc.response.status_code == 401:
            _err(f"kagentd (pid {pid}, {info.url}) is running and wants an API key for /health:"
                 " pass --api-key KEY, or set $KAGENT_API_KEY or http.api_key")
        else:
            _err(f"kagentd (pid {pid}) is running but {info.url}/health answered {exc.response.status_code}")
        return 1
    except httpx.HTTPError as exc:
        _err(f"kagentd (pid {pid}) is running but {info.url}/health did not answer: {exc}")
        return 1
    _out(json.dumps(h, indent=2) if args.json else "\n".join(describe_health(h, info)))
    return 0


def cmd_config(args: argparse.Namespace) -> int:
    if args.markdown:
        _out(render_markdown())
        return 0
    config, path, paths = load(args)
    if args.check:
        _out(f"config ok ({path or 'defaults; no config file'})")
        return 0
    _out(f"# kagentd configuration in effect (file: {path or 'none'}; then KAGENT_<SECTION>__<FIELD>; then flags)")
    _out(f"# paths: db {paths.db}, log {paths.log_file}, pid {paths.pid_file}")
    _out(render_toml(config, secrets=args.show_secrets))
    return 0


COMMANDS = {"run": cmd_run, "start": cmd_start, "stop": cmd_stop, "status": cmd_status, "config": cmd_config}


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        code = COMMANDS[args.command](args)
    except ConfigError as exc:
        _err(f"configuration error: {exc}")
        return 2
    if args.command == "run" and argv is None:
        # Everything is closed (store, sockets, workers) and the pid files are gone: skip the
        # interpreter's teardown of torch and the rest, which took 1-2 s that `kagentd stop` waited.
        logging.shutdown()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def free_port() -> int:
    """A TCP port free right now on 127.0.0.1 (tests and scripts)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


if __name__ == "__main__":
    sys.exit(main())
