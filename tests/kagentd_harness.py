"""Real processes for the daemon tests: the scripted policy server (`python -m runtime.fakes.scripted`)
and kagentd (`python -m runtime.kagentd_cli`), each with hermetic XDG dirs under a temp folder.

The only fake is the LLM: scripts of assistant turns replayed over HTTP by runtime/fakes/scripted.py.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from runtime.kagentd_cli import free_port

ROOT = Path(__file__).resolve().parents[1]
RELU = ROOT / "problems" / "level1" / "01_relu.py"
RELU_SOLUTION = ROOT / "problems" / "solutions" / "cpu" / "level1" / "01_relu"
CPU_RELU_SCRIPT = ROOT / "runtime" / "fakes" / "scripts" / "cpu_relu.json"



def write_relu_turn() -> dict[str, Any]:
    """A scripted turn that writes the CPU relu solution (kernel + model_new.py)."""
    kernel = (RELU_SOLUTION / "kernels" / "relu.cpp").read_text()
    model_new = (RELU_SOLUTION / "model_new.py").read_text()
    return {"content": "One OpenMP pass.", "tool_calls": [
        {"name": "write_file", "arguments": {"path": "kernels/relu.cpp", "content": kernel}},
        {"name": "write_file", "arguments": {"path": "model_new.py", "content": model_new}}]}


SUBMIT = {"content": "Done.", "tool_calls": [{"name": "submit", "arguments": {"summary": "relu"}}]}
READ = {"content": "Reading.", "tool_calls": [{"name": "read_file", "arguments": {"path": "model.py"}}]}


def base_env(tmp: Path, cache: Path | None = None) -> dict[str, str]:
    """Hermetic environment: no KAGENT_* from outside, XDG dirs under tmp."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAGENT_")}
    (tmp / "xdg-run").mkdir(parents=True, exist_ok=True, mode=0o700)
    env.update(XDG_STATE_HOME=str(tmp / "xdg-state"), XDG_RUNTIME_DIR=str(tmp / "xdg-run"),
               XDG_CONFIG_HOME=str(tmp / "xdg-config"), XDG_CACHE_HOME=str(cache or tmp / "xdg-cache"),
               PYTHONPATH=str(ROOT), KAGENT_UNSAFE_NO_SANDBOX="1")
    return env


class Scripted:
    """`python -m runtime.fakes.scripted` as a subprocess."""

    def __init__(self, tmp: Path, script: list[dict[str, Any]] | Path, *, delay: float = 0.0, loop: bool = False,
                 name: str = "scripted") -> None:
        if isinstance(script, Path):
            path = script
        else:
            path = tmp / f"{name}.json"
            path.write_text(json.dumps({"turns": script}))
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        cmd = [sys.executable, "-m", "runtime.fakes.scripted", "--script", str(path), "--port", str(self.port),
               "--delay", str(delay), *(["--loop"] if loop else [])]
        self.log = open(tmp / f"{name}.log", "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=base_env(tmp), stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, (tmp / f"{name}.log").read_text()
            try:
                if httpx.get(f"{self.base_url}/models", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise TimeoutError("the scripted server did not start")

    def models(self) -> list[str]:
        return [m["id"] for m in httpx.get(f"{self.base_url}/models", timeout=5).json()["data"]]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
        self.log.close()


def toml_value(v: Any) -> str:
    return json.dumps(v) if not isinstance(v, bool) else ("true" if v else "false")


class Kagentd:
    """kagentd driven through its command line, with its own config file and XDG dirs."""

    def __init__(self, tmp: Path, policy_url: str, *, cache: Path | None = None, grace: float = 30.0,
                 api_key: str | None = None, extra: dict[str, dict[str, Any]] | None = None) -> None:
        self.tmp = tmp
        self.api_key = api_key
        self.env = base_env(tmp, cache)
        sections: dict[str, dict[str, Any]] = {
            "daemon": {"grace_seconds": grace},
            "http": {"port": 0, **({"api_key": api_key} if api_key else {})},
            "policy": {"base_url": policy_url, "retries": 1, "backoff_s": 0.2},
            "scheduler": {"problems_dir": str(ROOT / "problems"), "warm_workers": False,
                          "workspace_root": str(tmp / "workspaces"), "policy_backoff_s": 0.5},
            "scheduler.eval": {"backend": "cpu", "baselines": ["eager"]},
            "scheduler.eval.timing": {"target_seconds": 0.05, "warmup_calls": 3, "min_calls": 10},
        }
        for key, values in (extra or {}).items():
            sections.setdefault(key, {}).update(values)
        self.config = tmp / "kagentd.toml"
        self.write_config(sections)
        self.sections = sections
        self.state = tmp / "xdg-state" / "kagent"
        self.run_dir = tmp / "xdg-run" / "kagent"
        self.db = self.state / "kagent.db"

    def write_config(self, sections: dict[str, dict[str, Any]]) -> None:
        text = "".join(f"[{name}]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in values.items())
                       for name, values in sections.items())
        self.config.write_text(text)

    def cli(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "runtime.kagentd_cli", *args, "--config", str(self.config)],
                              cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)

    def kagent(self, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "runtime.cli", *args, "--config", str(self.config)],
                              cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> str:
        proc = self.cli("start", timeout=600)  # kagentd start bounds its own wait (start_wait_s)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return self.url

    @property
    def info(self) -> dict[str, Any]:
        return dict(json.loads((self.run_dir / "kagentd.json").read_text()))

    @property
    def url(self) -> str:
        return str(self.info["url"])

    @property
    def pid(self) -> int:
        return int((self.run_dir / "kagentd.pid").read_text())

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def health(self) -> dict[str, Any]:
        r = httpx.get(f"{self.url}/health", headers=self.headers, timeout=10)
        r.raise_for_status()
        return dict(r.json())

    def wait_for(self, predicate: Any, timeout: float = 60, what: str = "condition") -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.1)
        raise TimeoutError(f"timed out waiting for {what}")

    def sql(self, query: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True)
        try:
            return conn.execute(query, args).fetchall()
        finally:
            conn.close()

    def stop(self) -> subprocess.CompletedProcess[str]:
        return self.cli("stop", timeout=300)

    def kill(self) -> None:
        """Best effort at teardown: stop, then SIGKILL whatever is left."""
        try:
            pid = self.pid
        except (OSError, ValueError):
            return
        self.stop()
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def chat_body(source: str, **extra: Any) -> dict[str, Any]:
    return {"model": "kagent", "messages": [{"role": "user", "content": f"```python\n{source}\n```"}], **extra}
