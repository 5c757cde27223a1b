"""kagentd's configuration (runtime/config.py): precedence, errors that name the key, XDG paths,
the printed config, and a failing test for any setting without help or docs."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from runtime.config import (
    Config,
    ConfigError,
    changed,
    field_docs,
    load_config,
    reloadable,
    render_markdown,
    render_toml,
    resolve_paths,
    settings,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "config.md"  # its table is `kagentd config --markdown`


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_defaults_without_file_or_env() -> None:
    config = load_config(None, env={})
    assert config == Config()
    assert config.http.host == "127.0.0.1" and config.http.api_key is None


def test_precedence_file_then_env_then_flags(tmp_path: Path) -> None:
    f = write(tmp_path / "k.toml", "[http]\nport = 1000\nkeepalive_seconds = 3\n[scheduler.eval]\nbackend = 'cpu'\n")
    env = {"KAGENT_HTTP__PORT": "2000", "KAGENT_SCHEDULER__LIMITS__MAX_TURNS": "7"}
    assert load_config(f, env={}).http.port == 1000
    assert load_config(f, env=env).http.port == 2000
    config = load_config(f, env=env, overrides=["http.port=3000"])
    assert config.http.port == 3000
    assert config.http.keepalive_seconds == 3.0  # untouched by env and flags
    assert config.scheduler.eval.backend == "cpu"
    assert config.scheduler.limits.max_turns == 7  # nested section through the environment


def test_env_values_are_typed_and_lists_are_toml(tmp_path: Path) -> None:
    env = {"KAGENT_HTTP__CANCEL_ON_DISCONNECT": "false", "KAGENT_HOTLOAD__COMMAND": '["load", "{path}"]',
           "KAGENT_POLICY__SEED": "null", "KAGENT_HTTP__API_KEY": "12345",
           "KAGENT_UNSAFE_NO_SANDBOX": "1"}  # a skills variable (no section): ignored here
    config = load_config(None, env=env)
    assert config.http.cancel_on_disconnect is False
    assert config.hotload.command == ["load", "{path}"]
    assert config.policy.seed is None
    assert config.http.api_key == "12345"  # digits stay a string for a str field


@pytest.mark.parametrize(("source", "message"), [
    ("file", "unknown setting 'http.prot' in config file"),
    ("env", "unknown setting 'http.prot' in environment variable KAGENT_HTTP__PROT"),
    ("flag", "unknown setting 'http.prot' in --set http.prot"),
])
def test_unknown_key_names_key_source_and_suggestion(tmp_path: Path, source: str, message: str) -> None:
    f = write(tmp_path / "k.toml", "[http]\nprot = 1\n" if source == "file" else "")
    env = {"KAGENT_HTTP__PROT": "1"} if source == "env" else {}
    overrides = ["http.prot=1"] if source == "flag" else []
    with pytest.raises(ConfigError) as exc:
        load_config(f, env=env, overrides=overrides)
    assert message in str(exc.value)
    assert "did you mean http.port?" in str(exc.value)
    assert "valid in [http]: host, port, api_key" in str(exc.value)


def test_other_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"unknown section 'htp'; valid: daemon, http"):
        load_config(None, env={"KAGENT_HTP__PORT": "1"})
    with pytest.raises(ConfigError, match=r"invalid setting http.port \(from environment variable KAGENT_HTTP__PORT\)"):
        load_config(None, env={"KAGENT_HTTP__PORT": "eighty"})
    with pytest.raises(ConfigError, match=r"is not valid TOML"):
        load_config(write(tmp_path / "bad.toml", "[http\nport=1"), env={})
    with pytest.raises(ConfigError, match=r"cannot read config file .*missing.toml"):
        load_config(tmp_path / "missing.toml", env={})
    with pytest.raises(ConfigError, match=r"http in config file .*t.toml must be a table"):
        load_config(write(tmp_path / "t.toml", "http = 3\n"), env={})
    with pytest.raises(ConfigError, match=r"expected KEY=VALUE"):
        load_config(None, env={}, overrides=["http.port"])
    with pytest.raises(ConfigError, match=r"scheduler.eval.backend"):
        load_config(None, env={}, overrides=["scheduler.eval.backend=tpu"])


def test_a_removed_setting_names_the_one_to_use(tmp_path: Path) -> None:
    """scheduler.backend was a second name for scheduler.eval.backend: setting it anywhere is an error
    that names the setting to use instead, not a value silently dropped or moved."""
    want = r"scheduler.backend \(in {}\) is no longer a setting: set scheduler.eval.backend instead"
    with pytest.raises(ConfigError, match=want.format(r"config file .*old.toml")):
        load_config(write(tmp_path / "old.toml", "[scheduler]\nbackend = 'cpu'\n"), env={})
    with pytest.raises(ConfigError, match=want.format("environment variable KAGENT_SCHEDULER__BACKEND")):
        load_config(None, env={"KAGENT_SCHEDULER__BACKEND": "cpu"})
    with pytest.raises(ConfigError, match=want.format("--set scheduler.backend")):
        load_config(None, env={}, overrides=["scheduler.backend=cpu"])


def test_a_field_the_scheduler_fills_is_refused_with_the_setting_to_use(tmp_path: Path) -> None:
    """scheduler.eval.gpu is overwritten for every evaluation slot: a config that sets it would be
    ignored without a word, so it fails and names scheduler.gpus."""
    want = r"scheduler.eval.gpu \(in {}\) is not a setting: the scheduler sets it for each evaluation slot: choose" \
           r" the GPUs with scheduler.gpus"
    with pytest.raises(ConfigError, match=want.format(r"config file .*gpu.toml")):
        load_config(write(tmp_path / "gpu.toml", "[scheduler.eval]\ngpu = '1'\n"), env={})
    with pytest.raises(ConfigError, match=want.format("--set scheduler.eval.gpu")):
        load_config(None, env={}, overrides=["scheduler.eval.gpu=1"])
    assert load_config(None, env={}, overrides=['scheduler.gpus=["1"]']).scheduler.gpus == ["1"]


def test_public_bind_needs_an_api_key() -> None:
    with pytest.raises(ConfigError, match="exposes the API beyond this machine: set http.api_key"):
        load_config(None, env={}, overrides=["http.host=0.0.0.0"])
    config = load_config(None, env={"KAGENT_HTTP__API_KEY": "s3cret"}, overrides=["http.host=0.0.0.0"])
    assert config.http.host == "0.0.0.0"
    for host in ("127.0.0.1", "::1", "localhost"):
        assert load_config(None, env={}, overrides=[f"http.host={host}"]).http.api_key is None


def test_every_setting_has_help_and_is_documented() -> None:
    docs = DOCS.read_text()
    missing_help = [s.key for s in settings(Config()) if not s.doc]
    missing_docs = [s.key for s in settings(Config()) if f"`{s.key}`" not in docs]
    assert not missing_help, f"settings without a docstring: {missing_help}"
    assert not missing_docs, f"settings missing from {DOCS.name} (kagentd config --markdown): {missing_docs}"
    assert len(list(settings(Config()))) > 60  # nested sections (scheduler.eval.timing, ...) are walked


def test_field_docs_reads_the_docstring_under_each_field() -> None:
    from runtime.config import HttpConfig

    docs = field_docs(HttpConfig)
    assert docs["port"].startswith("TCP port")
    assert set(docs) == {f for f in HttpConfig.__struct_fields__}


def test_printed_config_is_toml_that_loads_back(tmp_path: Path) -> None:
    config = load_config(None, env={"KAGENT_HTTP__API_KEY": "k"},
                         overrides=["http.port=9000", "scheduler.eval.backend=cpu", "scheduler.eval.timing.min_calls=5"])
    text = render_toml(config, secrets=True)
    tables = tomllib.loads(text)
    assert tables["http"]["port"] == 9000 and tables["scheduler"]["eval"]["timing"]["min_calls"] == 5
    assert "port = 9000  # changed from the default" in text
    again = load_config(write(tmp_path / "printed.toml", text), env={})
    assert again == config
    masked = render_toml(config)
    assert 'api_key = "***"' in masked and '"k"' not in masked


def test_markdown_table_lists_every_setting() -> None:
    table = render_markdown()
    assert table.count("\n| `") == len(list(settings(Config())))
    assert "| `http.port` | `8473` |" in table


def test_reload_classification() -> None:
    old = Config()
    new = load_config(None, env={}, overrides=["http.port=1", "http.api_key=x", "scheduler.gpu_slots=2"])
    keys = changed(old, new)
    assert sorted(keys) == ["http.api_key", "http.port", "scheduler.gpu_slots"]
    assert [k for k in keys if reloadable(k)] == ["http.api_key"]


def test_xdg_paths(tmp_path: Path) -> None:
    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir()
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "XDG_RUNTIME_DIR": str(runtime_dir), "HOME": str(tmp_path)}
    p = resolve_paths(Config().daemon, env)
    assert p.db == tmp_path / "state" / "kagent" / "kagent.db"
    assert p.log_file == tmp_path / "state" / "kagent" / "kagentd.log"
    assert p.pid_file == runtime_dir / "kagent" / "kagentd.pid"
    assert p.info_file == runtime_dir / "kagent" / "kagentd.json"
    # Relative XDG values are invalid (the spec says ignore them); a missing runtime dir falls back.
    p = resolve_paths(Config().daemon, {"XDG_STATE_HOME": "rel", "XDG_RUNTIME_DIR": str(tmp_path / "nope"),
                                        "HOME": str(tmp_path)})
    assert p.state_dir == tmp_path / ".local" / "state" / "kagent"
    assert p.run_dir == p.state_dir
    explicit = load_config(None, env={}, overrides=[f"daemon.state_dir={tmp_path / 's'}", f"daemon.db={tmp_path / 'x.db'}"])
    p = resolve_paths(explicit.daemon, {"HOME": str(tmp_path)})
    assert p.db == tmp_path / "x.db" and p.run_dir == tmp_path / "s"


def kagentd(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KAGENT_")}
    return subprocess.run([sys.executable, "-m", "runtime.kagentd_cli", *args], env={**base, **(env or {})}, cwd=ROOT,
                          capture_output=True, text=True, timeout=120, check=False)


def test_kagentd_config_command(tmp_path: Path) -> None:
    f = write(tmp_path / "k.toml", "[http]\nport = 1234\napi_key = 's3cr3t-token'\n")
    proc = kagentd("config", "--config", str(f), "--set", "scheduler.eval.backend=cpu",
                   env={"KAGENT_HTTP__KEEPALIVE_SECONDS": "2.5"})
    assert proc.returncode == 0, proc.stderr
    assert f"(file: {f}" in proc.stdout
    assert "port = 1234  # changed from the default" in proc.stdout
    assert "keepalive_seconds = 2.5  # changed from the default" in proc.stdout
    assert 'backend = "cpu"  # changed from the default' in proc.stdout
    assert "# TCP port (0: any free port" in proc.stdout  # help text next to each setting
    assert "s3cr3t-token" not in proc.stdout and 'api_key = "***"' in proc.stdout
    bad = kagentd("config", "--check", "--config", str(write(tmp_path / "bad.toml", "[daemon]\ngrace = 1\n")))
    assert bad.returncode == 2
    assert "kagentd: configuration error: unknown setting 'daemon.grace'" in bad.stderr
    assert "did you mean daemon.grace_seconds?" in bad.stderr
    assert "Traceback" not in bad.stderr
    public = kagentd("run", "--host", "0.0.0.0", "--set", f"daemon.state_dir={tmp_path / 'st'}")
    assert public.returncode == 2 and "set http.api_key" in public.stderr
    assert not (tmp_path / "st").exists()  # refused before anything was created


def test_kagentd_start_waits_for_ray_actors_as_long_as_the_daemon_does() -> None:
    """The daemon answers /health only once its actors are placed (bounded by ray.start_timeout_s):
    `kagentd start` giving up sooner called a slowly placed cluster a failed start."""
    import msgspec

    from runtime.kagentd_cli import start_wait_s

    config = Config()
    assert start_wait_s(config) == config.daemon.start_timeout_seconds == 60.0
    ray = msgspec.structs.replace(config, scheduler=msgspec.structs.replace(config.scheduler, executor="ray"),
                                  ray=msgspec.structs.replace(config.ray, start_timeout_s=120.0))
    assert start_wait_s(ray) == 150.0
    longer = msgspec.structs.replace(ray, daemon=msgspec.structs.replace(ray.daemon, start_timeout_seconds=400.0))
    assert start_wait_s(longer) == 400.0
