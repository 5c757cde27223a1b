"""The `kagent` commands that work with the daemon and its store (wired in runtime/cli.py):

    kagent solve FILE [--out DIR] [--answer FILE] [--url URL] [--api-key KEY] [--quiet]
    kagent episodes list [--status S] [--origin O] [--limit N] [--json]
    kagent episodes show ID [--full] [--tokens] [--json]
    kagent episodes export --out FILE [--format jsonl|parquet|trl|trl-messages] [--all] [--trainable] [--min-reward R]
    kagent replay EPISODE [--skip-timing] [--backend cpu|cuda] [--baselines LIST] [--json]

`solve` goes through the running daemon's HTTP API (streaming its progress to stderr); the
others read the store file directly (read-only, so they work with or without a daemon). All take
`--config FILE` (kagentd's TOML) and `--db PATH` to find the store.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any, TypeVar, get_args

import anyio
import httpx
import msgspec

from runtime.config import Config, ConfigError, default_config_path, load_config, resolve_paths
from runtime.daemon_files import read_info, running
from runtime.store import EpisodeStatus, Store, StoreError
from runtime.stream_format import SEPARATOR

T = TypeVar("T")


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(f"kagent: {text}\n")


class UsageError(Exception):
    """Bad input on the command line; exit status 2."""


class NotRunning(Exception):
    """No daemon to talk to; exit status 3."""


# ---------------------------------------------------------------------------- arguments

EPISODE_STATUSES = list(get_args(EpisodeStatus))
EXPORT_SUFFIXES = {".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl", ".parquet": "parquet"}


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value



def _config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", type=Path, default=None, help="kagentd's TOML config (default: as kagentd finds it)")
    p.add_argument("--db", type=Path, default=None, help="the store file (default: daemon.db of the config)")


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("solve", help="have the running kagentd solve a problem (a KernelBench file)")
    p.add_argument("file", type=Path, help="problem file in KernelBench format")
    p.add_argument("--out", type=Path, default=None, help="write the verified model_new.py and kernels/ into this folder")
    p.add_argument("--answer", type=Path, default=None, help="write the markdown answer here (default: stdout)")
    p.add_argument("--name", default=None, help="problem name in the store (default: levelN/stem, or the stem)")
    p.add_argument("--url", default=None, help="daemon URL (default: $KAGENT_URL, else the running daemon's info file)")
    p.add_argument("--api-key", default=None, help="bearer key (default: $KAGENT_API_KEY, else http.api_key)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    _config_args(p)

    p = sub.add_parser("episodes", help="episodes in the store")
    esub = p.add_subparsers(dest="action", required=True)
    e = esub.add_parser("list", help="a table of episodes, newest first")
    e.add_argument("--status", choices=EPISODE_STATUSES, default=None, metavar="STATUS",
                   help=f"only this status ({', '.join(EPISODE_STATUSES)})")
    e.add_argument("--origin", choices=["rollout", "request", "replay"], default=None, help="only this origin")
    e.add_argument("--limit", type=positive_int, default=20, help="rows (default 20)")
    e.add_argument("--json", action="store_true", help="JSON lines instead of a table")
    _config_args(e)
    e = esub.add_parser("show", help="one episode as a readable transcript")
    e.add_argument("id", type=int, help="episode id")
    e.add_argument("--full", action="store_true", help="do not cut long texts")
    e.add_argument("--tokens", action="store_true", help="show token ids and logprobs per turn")
    e.add_argument("--json", action="store_true", help="the whole record (turns with token arrays) as JSON")
    _config_args(e)
    e = esub.add_parser("export", help="episodes as JSONL or Parquet (one episode per line/row), or TRL datasets")
    e.add_argument("--out", type=Path, required=True, help="output file")
    e.add_argument("--format", choices=["jsonl", "parquet", "trl", "trl-messages"], default=None,
                   help="default: from the --out suffix (.jsonl, .json, .ndjson or .parquet); trl: pre-tokenized"
                        " rows of the RFT episodes for trl.SFTTrainer (input_ids, completion_mask, labels), one per"
                        " document, Parquet when --out ends in .parquet, else JSONL; trl-messages: TRL's"
                        " conversational form with tools (messages with tool_calls, tools: the offered tools' JSON"
                        " schemas), one JSONL row per finished episode, for SFTTrainer to apply the chat template")
    e.add_argument("--all", action="store_true", help="include running episodes (default: finished only)")
    e.add_argument("--trainable", action="store_true", help="only trainable episodes")
    e.add_argument("--min-reward", type=float, default=0.0,
                   help="trl, trl-messages: episodes whose reward is above this (as the trainer's"
                        " --rft-min-reward; default 0)")
    _config_args(e)

    p = sub.add_parser("replay", help="re-run a logged episode's tool calls in a fresh sandbox and compare")
    p.add_argument("episode", type=int, help="episode id")
    p.add_argument("--skip-timing", action="store_true", help="replay profile calls as run_tests (no timing)")
    p.add_argument("--backend", choices=["cuda", "cpu"], default=None, help="default: the episode's backend")
    p.add_argument("--baselines", default=None, help="comma list of eager,compile (default: the config's)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--unsafe-no-sandbox", action="store_true", help="run candidate code without bubblewrap (trusted code only)")
    _config_args(p)


# ------------------------------------------------------------------------------- helpers


def _config(args: argparse.Namespace) -> Config:
    path = args.config or default_config_path(os.environ)
    return load_config(path)


def _db(args: argparse.Namespace, config: Config) -> Path:
    db = args.db or resolve_paths(config.daemon).db
    if not db.is_file():
        raise UsageError(f"no store at {db} (has kagentd run with it? pass --db PATH or --config FILE)")
    return Path(db)


def _read(db: Path, fn: Callable[[Store], Awaitable[T]]) -> T:
    async def go() -> T:
        async with Store.open(db, readonly=True) as store:
            return await fn(store)
    return anyio.run(go)


def _console() -> Any:
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else int(os.environ.get("COLUMNS", "160")), soft_wrap=False)


# --------------------------------------------------------------------------------- solve


def _daemon_url(args: argparse.Namespace, config: Config) -> str:
    if args.url:
        return str(args.url).rstrip("/")
    if os.environ.get("KAGENT_URL"):
        return os.environ["KAGENT_URL"].rstrip("/")
    paths = resolve_paths(config.daemon)
    info = read_info(paths)
    if info is not None and running(paths) == info.pid:
        return info.url
    if info is not None:  # the files of a daemon that is gone: never fall through to some other one
        raise NotRunning(f"kagentd is not running: {paths.info_file} names pid {info.pid} ({info.url}),"
                         " which has exited; start it with `kagentd start`, or pass --url")
    host = config.http.host if config.http.host not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"http://{host}:{config.http.port}"


def _sse(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.startswith("data: "):
            continue  # blank separators and ": keepalive" comments
        data = line[len("data: "):]
        if data.strip() == "[DONE]":
            return
        yield json.loads(data)


def _write_files(out: Path, files: dict[str, str]) -> list[Path]:
    written = []
    for rel, text in files.items():
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or not parts:
            raise UsageError(f"refusing to write {rel!r} from the answer: not a relative path inside --out")
        dest = out.joinpath(*parts)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        written.append(dest)
    return written


def _stream(response: httpx.Response, quiet: bool) -> tuple[str, dict[str, Any]]:
    answer = ""
    extension: dict[str, Any] = {}
    for chunk in _sse(response.iter_lines()):
        if "error" in chunk:
            raise StoreError(f"the daemon reported: {chunk['error'].get('message')}")
        extension = chunk.get("kagent") or extension
        for choice in chunk.get("choices", []):
            text = (choice.get("delta") or {}).get("content") or ""
            if text.startswith(SEPARATOR):
                answer = text[len(SEPARATOR):]
            elif text and not quiet:
                sys.stderr.write(text)
                sys.stderr.flush()
    return answer, extension


def _interruptible(fn: Callable[[], T]) -> T:
    """fn() in a helper thread while this (the main) thread waits in short slices, so Ctrl-C ends
    the wait at once: a process-directed SIGINT may be delivered to any thread (numpy's OpenBLAS
    starts one here), and a main thread blocked in a socket read then saw the KeyboardInterrupt only
    when the next chunk arrived, which during a long policy turn is minutes away. On Ctrl-C the
    helper is left behind; the process exits, which closes the connection (kagentd cancels the
    episode). fn's exception is raised here."""
    result: list[T] = []
    error: list[BaseException] = []

    def run() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # noqa: BLE001 (handed to the caller)
            error.append(exc)

    helper = threading.Thread(target=run, name="kagent-solve", daemon=True)
    helper.start()
    while helper.is_alive():
        helper.join(0.2)
    if error:
        raise error[0]
    return result[0]


def run_solve(args: argparse.Namespace) -> int:
    try:
        source = args.file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read {args.file}: {exc}") from None
    config = _config(args)
    url = _daemon_url(args, config)
    key = args.api_key or os.environ.get("KAGENT_API_KEY") or config.http.api_key
    level = args.file.parent.name
    name = args.name or (f"{level}/{args.file.stem}" if level.startswith("level") else args.file.stem)
    # The server takes the fenced block's body as the source: exactly the file's text, so the
    # content id (and the baselines timed for it) is the one the file has everywhere else.
    fenced = f"```python\n{source}{'' if source.endswith(chr(10)) else chr(10)}```"
    body = {"model": "kagent", "stream": True, "problem_name": name,
            "messages": [{"role": "user", "content": fenced}]}
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    began = time.monotonic()

    def exchange() -> tuple[str, dict[str, Any]] | int:
        with httpx.Client(timeout=httpx.Timeout(30.0, read=None)) as client, \
                client.stream("POST", f"{url}/v1/chat/completions", json=body, headers=headers) as r:
            if r.status_code != 200:
                r.read()
                try:
                    message = r.json()["error"]["message"]
                except (ValueError, KeyError, TypeError):
                    message = r.text[:500]
                if r.status_code == 401:
                    message += " (pass --api-key, or set $KAGENT_API_KEY or http.api_key)"
                _err(f"kagentd refused the request ({r.status_code}): {message}")
                return 2 if r.status_code < 500 else 1
            return _stream(r, args.quiet)

    try:
        got = _interruptible(exchange)
        if isinstance(got, int):
            return got
        answer, ext = got
    except httpx.ConnectError:
        _err(f"kagentd is not running at {url} (start it with `kagentd start`, or pass --url)")
        return 3
    except KeyboardInterrupt:
        _err("interrupted: the connection is closed, and kagentd cancels the episode"
             " (http.cancel_on_disconnect)")
        return 130
    except httpx.HTTPError as exc:
        _err(f"the connection to kagentd at {url} failed: {type(exc).__name__}: {exc}")
        return 1
    if args.answer:
        args.answer.write_text(answer, encoding="utf-8")
    else:
        _out(answer.rstrip("\n"))
    files = ext.get("files") or {}
    if args.out and files:
        for path in _write_files(args.out, files):
            _err(f"wrote {path}")
    _err(f"episode {ext.get('episode_id')}: {ext.get('status')}, reward {ext.get('reward')},"
         f" {'verified solution' if files else 'no verified solution'} ({time.monotonic() - began:.1f} s)")
    return 0 if files else 1


# ------------------------------------------------------------------------------ episodes


def run_episodes(args: argparse.Namespace) -> int:
    config = _config(args)
    db = _db(args, config)
    if args.action == "list":
        return _list(args, db)
    if args.action == "show":
        return _show(args, db)
    return _export(args, db, config)


def _list(args: argparse.Namespace, db: Path) -> int:
    from runtime.store import queries

    rows = _read(db, lambda s: s.read(lambda c: queries.episode_summaries(
        c, status=args.status, origin=args.origin, limit=max(1, args.limit))))
    if args.json:
        for row in rows:
            _out(msgspec.json.encode(row).decode())
        return 0
    from rich.table import Table

    table = Table(title=f"episodes in {db} (newest first)")
    for col in ("id", "problem", "origin", "status", "reward", "turns", "calls", "sampled", "x eager",
                "x compile", "seconds", "started"):
        table.add_column(col, justify="right" if col not in ("problem", "origin", "status") else "left")

    def num(v: float | None, fmt: str = "{:g}") -> str:
        return "—" if v is None else fmt.format(v)
    for r in rows:
        table.add_row(str(r.id), r.problem, r.origin, r.status, num(r.reward), str(r.turns), str(r.tool_calls),
                      num(r.completion_tokens), num(r.speedup_eager, "{:.2f}"), num(r.speedup_compile, "{:.2f}"),
                      num(r.seconds, "{:.1f}"), time.strftime("%m-%d %H:%M:%S", time.localtime(r.started)))
    _console().print(table)
    if not rows:
        _out("no episodes" + (f" with status {args.status}" if args.status else ""))
    return 0


def _show(args: argparse.Namespace, db: Path) -> int:
    from runtime.transcript import render

    detail = _read(db, lambda s: s.get_episode(args.id))
    if detail is None:
        raise UsageError(f"no episode {args.id} in {db}")
    if args.json:
        _out(msgspec.json.encode(detail).decode())
    else:
        sys.stdout.write(render(detail, full=args.full, tokens=args.tokens))
    return 0


def _export(args: argparse.Namespace, db: Path, config: Config) -> int:
    fmt = args.format or EXPORT_SUFFIXES.get(args.out.suffix.lower())
    if fmt is None:
        raise UsageError(f"cannot tell the format of {args.out} from its suffix {args.out.suffix!r}: name it"
                         f" {', '.join(EXPORT_SUFFIXES)} or pass --format jsonl|parquet|trl|trl-messages")
    folder = args.out.resolve().parent
    if not folder.is_dir():
        raise UsageError(f"cannot write {args.out}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write {args.out}: the folder {folder} is not writable")
    if fmt == "trl":
        return _export_trl(args, db)
    if fmt == "trl-messages":
        return _export_trl_messages(args, db, config)
    finished = None if args.all else True
    trainable = True if args.trainable else None

    async def go(store: Store) -> int:
        if fmt == "parquet":
            return await store.export_parquet(args.out, finished=finished, trainable=trainable)
        return await store.export_jsonl(args.out, finished=finished, trainable=trainable)
    try:
        n = _read(db, go)
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    _out(f"exported {n} episodes to {args.out} ({fmt})")
    return 0


def _export_trl(args: argparse.Namespace, db: Path) -> int:
    if args.all or args.trainable:
        raise UsageError("--format trl exports the RFT episodes (finished, trainable, graded): drop --all/--trainable")
    from trainer.sft_trl import export  # torch: only for this format

    try:
        rows, episodes = _read(db, lambda s: export(s, args.out, min_reward=args.min_reward))
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    _out(f"exported {rows} rows of {episodes} episodes to {args.out} (trl, reward above {args.min_reward:g})")
    return 0


def _export_trl_messages(args: argparse.Namespace, db: Path, config: Config) -> int:
    if args.all:
        raise UsageError("--format trl-messages exports finished, graded episodes: drop --all")
    if args.out.suffix.lower() == ".parquet":
        raise UsageError("--format trl-messages writes JSONL (the calls' arguments differ in shape from tool to"
                         " tool, which a Parquet schema would merge): name the file .jsonl")
    from runtime.tokens import get_tool_parser
    from trainer.trl_messages import episode_backend, export_conversations, offered_tools

    sched = config.scheduler
    by_backend = {b: offered_tools(sched.tools, b) for b in ("cuda", "cpu")}
    try:
        rows, skipped = _read(db, lambda s: export_conversations(
            s, args.out, tools_for=lambda d: by_backend[episode_backend(d, sched.eval.backend)],
            parse=get_tool_parser(config.policy.tool_parser), min_reward=args.min_reward,
            trainable=True if args.trainable else None))
    except OSError as exc:
        raise UsageError(f"cannot write {args.out}: {exc.strerror or exc}") from None
    for eid, why in skipped.items():
        _err(f"episode {eid} left out: {why}")
    _out(f"exported {rows} episodes to {args.out} (trl-messages, reward above {args.min_reward:g};"
         f" {len(skipped)} left out)")
    return 0


# -------------------------------------------------------------------------------- replay


def run_replay(args: argparse.Namespace) -> int:
    from runtime.replay import Replayer, table_rows
    from runtime.store import StoreBaselineCache
    from skills.evaluator.sandbox import SandboxConfig

    config = _config(args)
    db = _db(args, config)
    detail = _read(db, lambda s: s.get_episode(args.episode))
    if detail is None:
        raise UsageError(f"no episode {args.episode} in {db}")
    if not detail.tool_calls:
        raise UsageError(f"episode {args.episode} has no tool calls to replay")
    logged = {ev.result.backend for ev in detail.evaluations}
    backend = args.backend or (logged.pop() if len(logged) == 1 else config.scheduler.eval.backend)
    eval_config = msgspec.structs.replace(config.scheduler.eval, backend=backend)
    if args.baselines:
        eval_config = msgspec.convert({**msgspec.to_builtins(eval_config),
                                       "baselines": [b.strip() for b in args.baselines.split(",") if b.strip()]},
                                      type(eval_config))
    if args.unsafe_no_sandbox:
        eval_config = msgspec.structs.replace(eval_config, sandbox=SandboxConfig(allow_unsafe=True))
    replayer = Replayer(detail, eval_config=eval_config, cache=StoreBaselineCache(db), skip_timing=args.skip_timing,
                        max_output_chars=config.scheduler.limits.max_tool_output_chars)
    rows = anyio.run(replayer.run)
    differ = [r for r in rows if r.differences]
    if args.json:
        _out(msgspec.json.encode(rows).decode())
    else:
        from rich.table import Table

        table = Table(title=f"replay of episode {args.episode} ({detail.problem.name}, {backend})")
        for col in ("turn.call", "skill", "logged", "replayed", "verdict"):
            table.add_column(col)
        for row in table_rows(rows):
            table.add_row(*row)
        _console().print(table)
        _out(f"{len(rows)} calls replayed: {len(rows) - len(differ)} same, {len(differ)} differ")
    return 1 if differ else 0


def run(args: argparse.Namespace) -> int:
    """Dispatch for runtime/cli.py; usage errors exit 2, store errors 1."""
    fn = {"solve": run_solve, "episodes": run_episodes, "replay": run_replay}[args.command]
    try:
        return fn(args)
    except UsageError as exc:
        _err(str(exc))
        return 2
    except NotRunning as exc:
        _err(str(exc))
        return 3
    except (ConfigError, StoreError, ValueError) as exc:
        _err(str(exc))
        return 1
