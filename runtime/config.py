"""kagentd's configuration (STYLE 6): one Struct per component, one TOML file + environment + flags.

    [daemon]                      # paths, shutdown
    [http]                        # the OpenAI-compatible endpoint
    [watch]                       # what the daemon watches
    [hotload]                     # checkpoints -> policy server
    [policy]                      # runtime.settings.PolicyConfig (the LLM endpoint)
    [scheduler]                   # runtime.settings.SchedulerConfig (slots, limits, problems)
    [ray]                         # runtime.settings.RayConfig (slots as Ray actors: scheduler.executor)

Precedence, lowest first: defaults, the TOML file, environment variables
`KAGENT_<SECTION>__<FIELD>` (nested: `KAGENT_SCHEDULER__LIMITS__MAX_TURNS`), then flags
(`--set section.field=value`). Values from the environment and flags are text read as the field's
type (`8080`, `true`, `null`); arrays and inline tables are written in TOML (`["a", "b"]`). Unknown keys are
an error that names the key and where it came from. Every field carries a docstring, which is its
help text (`kagentd config --print`); tests/runtime/test_config.py fails when one is missing or absent
from the settings table of docs/config.md.
"""

from __future__ import annotations

import ast
import difflib
import functools
import importlib.util
import inspect
import os
import re
import sys
import textwrap
import tomllib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

import msgspec

# runtime.settings, not runtime.policy/scheduler: those import openai and torch, and the CLI
# commands that only read the config (kagentd status/stop, kagent episodes) must start fast.
from runtime.settings import PolicyConfig, RayConfig, SchedulerConfig

ENV_PREFIX = "KAGENT_"
LOCAL_HOSTS = frozenset({"127.0.0.1", "::1", "localhost"})


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and where it came from."""


class DaemonConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Where the daemon keeps its files, and how it stops."""

    db: str | None = None
    """SQLite store file (default: <state_dir>/kagent.db)."""
    state_dir: str | None = None
    """Folder for the store, the log and workspaces (default: $XDG_STATE_HOME/kagent, else ~/.local/state/kagent)."""
    run_dir: str | None = None
    """Folder for the pid and info files (default: $XDG_RUNTIME_DIR/kagent when that is set, else state_dir)."""
    log_file: str | None = None
    """Log file of a detached daemon (default: <state_dir>/kagentd.log)."""
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    """Logging level."""
    grace_seconds: float = 60.0
    """On SIGTERM/SIGINT: how long running episodes may take to finish before they are cancelled."""
    start_timeout_seconds: float = 60.0
    """`kagentd start`: how long to wait for the new daemon's /health to answer (ray executor: at least ray.start_timeout_s + 30)."""


class HttpConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """The HTTP server (OpenAI-compatible API, health, episode reads)."""

    host: str = "127.0.0.1"
    """Address to bind; anything but 127.0.0.1, ::1 or localhost needs api_key."""
    port: int = 8473
    """TCP port (0: any free port; the info file and `kagentd status` say which)."""
    api_key: str | None = None
    """Bearer token every request must carry (None: no auth, allowed on localhost only)."""
    max_body_bytes: int = 1_048_576
    """Largest request body accepted (larger: 413)."""
    keepalive_seconds: float = 15.0
    """Streaming: send an SSE comment when no progress arrived for this long."""
    cancel_on_disconnect: bool = True
    """Cancel a request's episode when its client disconnects (False: it runs to the end)."""


class WatchConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Folders and files the daemon watches (watchfiles)."""

    config: bool = True
    """Reload the config file when it changes (settings that cannot change live are named in the log and /health)."""
    problems: bool = True
    """Watch scheduler.problems_dir; new or changed problems reach the scheduler."""
    debounce_ms: int = 500
    """Quiet time that ends a burst of file events before the daemon reacts."""


class HotloadConfig(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """New checkpoints (`step_N/` with a `STABLE` marker) -> the policy server -> a new policy version."""

    checkpoints_dir: str | None = None
    """Folder the trainer writes step_N/ checkpoints into (None: no hot-loading)."""
    mode: Literal["lora", "command", "none"] = "lora"
    """lora: vLLM runtime LoRA loading (POST /v1/load_lora_adapter); command: run `command`; none: only record the version."""
    server_url: str | None = None
    """Policy server root for the LoRA endpoints (default: policy.base_url without its /v1)."""
    adapter_prefix: str = "kagent-step"
    """Adapter name = <adapter_prefix>-<N> for step_N; episodes then request that model name."""
    keep_adapters: int = 2
    """Adapters kept loaded (older ones are unloaded; episodes in flight may still use the previous one)."""
    command: list[str] = msgspec.field(default_factory=list)
    """mode=command: argv run for each checkpoint; {path}, {name} and {step} are replaced (untested against vLLM)."""
    timeout_seconds: float = 300.0
    """Limit on one load (HTTP call or command)."""
    retries: int = 5
    """Attempts per checkpoint before the daemon gives up on it (it says so in /health)."""
    load_latest_on_start: bool = True
    """At start-up, load the newest STABLE checkpoint already in checkpoints_dir."""


class Config(msgspec.Struct, kw_only=True, frozen=True, forbid_unknown_fields=True):
    """Everything kagentd reads."""

    daemon: DaemonConfig = msgspec.field(default_factory=DaemonConfig)
    """Paths and shutdown."""
    http: HttpConfig = msgspec.field(default_factory=HttpConfig)
    """HTTP server."""
    watch: WatchConfig = msgspec.field(default_factory=WatchConfig)
    """File watching."""
    hotload: HotloadConfig = msgspec.field(default_factory=HotloadConfig)
    """Checkpoint hot-loading."""
    policy: PolicyConfig = msgspec.field(default_factory=PolicyConfig)
    """The LLM endpoint (runtime.policy)."""
    scheduler: SchedulerConfig = msgspec.field(default_factory=SchedulerConfig)
    """Episodes, slots and limits (runtime.scheduler)."""
    ray: RayConfig = msgspec.field(default_factory=RayConfig)
    """Evaluation actors on a Ray cluster (scheduler.executor = "ray")."""


SECTIONS: dict[str, type[msgspec.Struct]] = {
    "daemon": DaemonConfig, "http": HttpConfig, "watch": WatchConfig, "hotload": HotloadConfig,
    "policy": PolicyConfig, "scheduler": SchedulerConfig, "ray": RayConfig,
}

REFUSED: dict[str, str] = {
    "scheduler.backend": "is no longer a setting: set scheduler.eval.backend instead",
    "scheduler.eval.gpu": "is not a setting: the scheduler sets it for each evaluation slot: choose the GPUs with"
                          " scheduler.gpus",
}
"""Keys a config may not set, and why: a setting that was renamed (the one to use instead), a field
the daemon fills in itself (rather than the value being overwritten without a word)."""

# Settings the running daemon applies when the config file changes; the rest need a restart.
RELOADABLE = ("http.api_key", "http.max_body_bytes", "http.keepalive_seconds",
              "http.cancel_on_disconnect", "daemon.grace_seconds", "daemon.log_level")


# ------------------------------------------------------------------------------ field docs


def _struct_type(tp: Any) -> type[msgspec.Struct] | None:
    """The Struct class in an annotation (`X`, `X | None`), else None."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return tp
    for arg in getattr(tp, "__args__", ()):
        if isinstance(arg, type) and issubclass(arg, msgspec.Struct):
            return arg
    return None


@functools.cache
def field_docs(cls: type[msgspec.Struct]) -> dict[str, str]:
    """{field: docstring} from the string literal under each field in the class source."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not (isinstance(klass, type) and issubclass(klass, msgspec.Struct)) or klass is msgspec.Struct:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for node, nxt in zip(body, [*body[1:], None], strict=True):
            if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                    and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant)
                    and isinstance(nxt.value.value, str)):
                docs[node.target.id] = " ".join(nxt.value.value.split())
    return docs


class Setting(msgspec.Struct, frozen=True):
    """One leaf setting, for help output and docs."""

    key: str
    """Dotted key, e.g. `http.port`."""
    value: Any
    """Value in effect."""
    default: Any
    """Default value."""
    doc: str
    """Help text (the field's docstring; empty when missing)."""
    type: str
    """Annotation as text."""


def _type_text(tp: Any) -> str:
    text = getattr(tp, "__name__", None) if isinstance(tp, type) else None
    return text or re.sub(r"\b(typing|builtins)\.", "", str(tp))


def settings(config: msgspec.Struct, prefix: str = "") -> Iterator[Setting]:
    """Every leaf setting of `config` (nested Structs are walked), in declaration order."""
    cls = type(config)
    defaults = cls()
    docs = field_docs(cls)
    hints = msgspec.structs.fields(cls)
    for f in hints:
        value = getattr(config, f.name)
        key = f"{prefix}{f.name}"
        if isinstance(value, msgspec.Struct) and _struct_type(f.type) is not None:
            yield from settings(value, key + ".")
            continue
        yield Setting(key=key, value=value, default=getattr(defaults, f.name),
                      doc=docs.get(f.name, ""), type=_type_text(f.type))


# ------------------------------------------------------------------------------- loading


def default_config_path(env: Mapping[str, str]) -> Path | None:
    """$KAGENT_CONFIG, else $XDG_CONFIG_HOME/kagent/kagentd.toml when it exists."""
    if env.get("KAGENT_CONFIG"):
        return Path(env["KAGENT_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or ""
    root = Path(base) if os.path.isabs(base) else Path(env.get("HOME", "~")).expanduser() / ".config"
    path = root / "kagent" / "kagentd.toml"
    return path if path.is_file() else None


def _parse_value(text: str, where: str) -> Any:
    """Arrays, inline tables and quoted strings as TOML; anything else stays text, which the
    conversion reads as the field's type (`8080` -> int, `true` -> bool, `null` -> None)."""
    if not text.startswith(("[", "{", '"', "'")):
        return text
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: {text!r} is not a valid TOML value: {exc}") from None


def _valid_keys(cls: type[msgspec.Struct]) -> dict[str, type[msgspec.Struct] | None]:
    return {f.name: _struct_type(f.type) for f in msgspec.structs.fields(cls)}


def _check_keys(raw: Mapping[str, Any], cls: type[msgspec.Struct], prefix: str,
                origin: dict[str, str]) -> None:
    valid = _valid_keys(cls)
    for key, value in raw.items():
        dotted = f"{prefix}{key}"
        if dotted in REFUSED:
            raise ConfigError(f"{dotted} (in {origin.get(dotted, 'the config')}) {REFUSED[dotted]}")
        if key not in valid:
            near = [v for v in valid if v.startswith(key) or key.startswith(v)]
            near = near or difflib.get_close_matches(key, list(valid), n=1)
            hint = f" (did you mean {prefix}{near[0]}?)" if near else ""
            where = origin.get(dotted, "the config")
            section = f"[{prefix[:-1]}]" if prefix else "the top level"
            raise ConfigError(f"unknown setting {dotted!r} in {where}{hint}; valid in {section}: "
                              f"{', '.join(valid)}")
        sub = valid[key]
        if sub is not None and isinstance(value, Mapping):
            _check_keys(value, sub, dotted + ".", origin)
        elif sub is not None:
            raise ConfigError(f"{dotted} in {origin.get(dotted, 'the config')} must be a table "
                              f"([{dotted}]), not {type(value).__name__}")


def _set(raw: dict[str, Any], dotted: str, value: Any, where: str, origin: dict[str, str]) -> None:
    parts = [p for p in dotted.split(".") if p]
    if not parts:
        raise ConfigError(f"empty setting name in {where}")
    node = raw
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{'.'.join(parts[:i + 1])} is not a table ({where})")
        node = child
    node[parts[-1]] = value
    origin[".".join(parts)] = where


def _read_file(path: Path, origin: dict[str, str]) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None

    def mark(node: Mapping[str, Any], prefix: str) -> None:
        for k, v in node.items():
            origin[prefix + k] = f"config file {path}"
            if isinstance(v, Mapping):
                mark(v, f"{prefix}{k}.")
    mark(raw, "")
    return raw


def _env_items(env: Mapping[str, str]) -> Iterator[tuple[str, str, str]]:
    """(dotted key, value, variable) for each KAGENT_<SECTION>__... variable, sorted by name.
    Other KAGENT_* variables (KAGENT_UNSAFE_NO_SANDBOX, ...) belong to the skills and are skipped."""
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or "__" not in name:
            continue
        section, _, rest = name[len(ENV_PREFIX):].partition("__")
        if section.lower() not in SECTIONS:
            raise ConfigError(f"environment variable {name}: unknown section {section.lower()!r}; "
                              f"valid: {', '.join(SECTIONS)}")
        dotted = ".".join([section.lower(), *rest.lower().split("__")])
        yield dotted, env[name], f"environment variable {name}"


def load_config(path: str | Path | None = None, *, env: Mapping[str, str] | None = None,
                overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Defaults <- TOML file <- KAGENT_<SECTION>__<FIELD> variables <- `overrides` (KEY=VALUE)."""
    env = os.environ if env is None else env
    origin: dict[str, str] = {}
    raw: dict[str, Any] = _read_file(Path(path), origin) if path is not None else {}
    for dotted, value, where in _env_items(env):
        _set(raw, dotted, _parse_value(value, where), where, origin)
    for item in overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError(f"--set {item!r}: expected KEY=VALUE, e.g. --set http.port=8080")
        where = f"--set {key.strip()}"
        _set(raw, key.strip(), _parse_value(value.strip(), where), where, origin)
    _check_keys(raw, Config, "", origin)
    try:
        config = msgspec.convert(raw, Config, strict=False)
    except msgspec.ValidationError as exc:
        m = re.search(r"at `\$\.([\w.\[\]]+)`", str(exc))
        key = re.sub(r"\[\d+\]", "", m[1]) if m else ""
        where = f" (from {origin[key]})" if key in origin else ""
        raise ConfigError(f"invalid setting{' ' + key if key else ''}{where}: {exc}") from None
    validate(config)
    return config


def validate(config: Config) -> None:
    """Checks across fields, with the fix in the message."""
    http = config.http
    if http.host not in LOCAL_HOSTS and not http.api_key:
        raise ConfigError(f"http.host = {http.host!r} exposes the API beyond this machine: set "
                          "http.api_key (or KAGENT_HTTP__API_KEY) too, or bind 127.0.0.1")
    if not 0 <= http.port <= 65535:
        raise ConfigError(f"http.port = {http.port} is not a TCP port (0-65535)")
    if http.max_body_bytes < 1024:
        raise ConfigError(f"http.max_body_bytes = {http.max_body_bytes} is too small (>= 1024)")
    if config.hotload.mode == "command" and config.hotload.checkpoints_dir and not config.hotload.command:
        raise ConfigError("hotload.mode = 'command' needs hotload.command (argv with {path}, {name}, {step})")
    if config.hotload.keep_adapters < 1:
        raise ConfigError("hotload.keep_adapters must be at least 1")
    if config.daemon.grace_seconds < 0:
        raise ConfigError("daemon.grace_seconds must be >= 0")
    if config.scheduler.executor == "ray" and importlib.util.find_spec("ray") is None:
        raise ConfigError("scheduler.executor = 'ray' needs Ray on this machine: pip install 'kagent[ray]'")
    if config.ray.slots_per_gpu < 1 or config.ray.attempts < 1:
        raise ConfigError("ray.slots_per_gpu and ray.attempts must be at least 1")


def reloadable(key: str) -> bool:
    return any(key == r or (r.endswith(".") and key.startswith(r)) for r in RELOADABLE)


def changed(old: Config, new: Config) -> list[str]:
    """Dotted keys whose value differs between two configs."""
    before = {s.key: s.value for s in settings(old)}
    return [s.key for s in settings(new) if before.get(s.key) != s.value]


# --------------------------------------------------------------------------------- paths


class Paths(msgspec.Struct, frozen=True):
    """The daemon's files, resolved from DaemonConfig and the XDG variables."""

    state_dir: Path
    """Store, log, workspaces."""
    run_dir: Path
    """Pid and info files."""
    db: Path
    """The SQLite store."""
    log_file: Path
    """Log of a detached daemon."""
    pid_file: Path
    """Pid of the running daemon."""
    info_file: Path
    """JSON written by the running daemon: pid, url, db, config file."""


def _xdg(env: Mapping[str, str], var: str, fallback: str) -> Path:
    value = env.get(var, "")
    # The XDG spec: relative paths are invalid and must be ignored.
    if value and os.path.isabs(value):
        return Path(value)
    return Path(env.get("HOME") or os.path.expanduser("~")) / fallback


def resolve_paths(config: DaemonConfig, env: Mapping[str, str] | None = None) -> Paths:
    env = os.environ if env is None else env
    state = Path(config.state_dir).expanduser() if config.state_dir else _xdg(env, "XDG_STATE_HOME", ".local/state") / "kagent"
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if config.run_dir:
        run = Path(config.run_dir).expanduser()
    elif runtime and os.path.isabs(runtime) and os.path.isdir(runtime):
        run = Path(runtime) / "kagent"
    else:
        run = state
    return Paths(state_dir=state, run_dir=run,
                 db=Path(config.db).expanduser() if config.db else state / "kagent.db",
                 log_file=Path(config.log_file).expanduser() if config.log_file else state / "kagentd.log",
                 pid_file=run / "kagentd.pid", info_file=run / "kagentd.json")


# ------------------------------------------------------------------------------ rendering


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return msgspec.json.encode(value).decode()
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return msgspec.json.encode(value).decode()


def render_toml(config: Config, *, secrets: bool = False) -> str:
    """The effective config as commented TOML (secrets masked unless `secrets`); valid TOML that
    load_config reads back to the same config (unset values are comments)."""
    tables: dict[str, list[Setting]] = {}
    for s in settings(config):
        tables.setdefault(s.key.rpartition(".")[0], []).append(s)
    lines: list[str] = []
    for table, items in tables.items():
        lines += ["", f"[{table}]"]
        for s in items:
            name = s.key.rpartition(".")[2]
            lines.append(f"# {s.doc}" if s.doc else "# (undocumented)")
            value = s.value
            if value is not None and not secrets and name == "api_key" and value not in ("", "EMPTY"):
                value = "***"
            text = f"{name} = {_toml_value(value)}" if value is not None else f"# {name} = (unset)"
            lines.append(text + ("" if s.value == s.default else "  # changed from the default"))
    return "\n".join(lines).lstrip() + "\n"


def render_markdown(config: Config | None = None) -> str:
    """One table row per setting, for docs/config.md."""
    rows = ["| setting | default | meaning |", "| --- | --- | --- |"]
    for s in settings(config or Config()):
        default = "unset" if s.default is None else _toml_value(s.default)
        if s.default == sys.executable:
            default = "(the interpreter running kagentd)"
        rows.append(f"| `{s.key}` | `{default}` | {s.doc.replace('|', '/')} |")
    return "\n".join(rows) + "\n"
