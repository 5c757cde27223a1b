"""The sandbox shows the candidate only what the worker needs (skills/evaluator/sandbox.py; docs/sandbox.md):
candidate code that looks for the host's files finds none of them, while honest evaluations (the
fair relu_cpu workspace here, load_inline builds in tests/skills/evaluator/test_ext_cache.py) still pass."""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from skills.evaluator.config import EvalConfig
from skills.evaluator.evaluate import evaluate
from skills.evaluator.results import EvalResult
from skills.evaluator.sandbox import SandboxConfig, needed_roots, wrap

ROOT = Path(__file__).resolve().parents[3]
RELU = ROOT / "problems" / "level1" / "01_relu.py"
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

# Static checks off (the runtime defence alone is under test): each probe prints what it saw.
PROBE = '''import os

def _probe(what, path):
    try:
        if what == "list":
            seen = " ".join(sorted(os.listdir(path)))
        elif what == "write":
            with open(path, "w") as f:
                f.write("5")
            seen = "written"
        else:
            with open(path, "rb") as f:
                seen = f.read(200).decode(errors="replace").replace("\\n", " ")
        print(f"PROBE {what} {path}: ALLOWED [{seen}]", flush=True)
    except OSError as exc:
        print(f"PROBE {what} {path}: DENIED {exc.strerror}", flush=True)

for _what, _path in @PROBES@:
    _probe(_what, _path)
''' + (FIXTURES / "relu_cpu" / "model_new.py").read_text()  # then the fair relu kernel


def probes(decoys: dict[str, Path]) -> list[tuple[str, str]]:
    """(kind, path) pairs: the host's files the candidate must not see, then what it must see."""
    hidden = [("read", "/etc/hostname"), ("read", "/etc/passwd"),
              ("read", str(decoys["scratch"])), ("list", str(decoys["scratch"].parent)),
              ("list", str(ROOT / "tests")), ("read", str(ROOT / "tests" / "conftest.py")),
              ("list", str(ROOT / "benchmarks")), ("list", str(ROOT / "runtime")), ("list", str(ROOT / ".git")),
              ("list", str(ROOT / "problems" / "solutions")), ("read", str(decoys["var_tmp"])),
              ("read", str(decoys["opt"])), ("read", str(decoys["home"])), ("list", "/home"),
              # /proc is read-only: the candidate cannot reset the peak resident set the parent reads
              ("write", "/proc/self/clear_refs")]
    visible = [("list", str(ROOT)), ("list", "/etc"), ("list", str(Path.home())), ("read", str(ROOT / "skills" / "evaluator" / "harness" / "candidate.py")),
               ("read", "model_new.py"), ("list", "/usr/bin")]
    return hidden + visible


def listing(line: str) -> list[str]:
    """The names of an ALLOWED list probe."""
    assert line.startswith("ALLOWED"), line
    return line[line.index("[") + 1:line.rindex("]")].split()


def lines(r: EvalResult) -> dict[str, str]:
    """'kind path' -> the rest of its PROBE line, from the candidate's log."""
    out = {}
    for line in r.log.splitlines():
        if line.startswith("PROBE ") and ": " in line:
            key, _, rest = line[len("PROBE "):].partition(": ")
            out[key] = rest
    return out


@pytest.fixture
def decoys() -> Iterator[dict[str, Path]]:
    """A secret in another evaluation's scratch folder (same place and prefix as real ones), under
    /var/tmp and under /opt: all readable on the host."""
    token = secrets.token_hex(6)
    shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
    other = Path(tempfile.mkdtemp(prefix="kagent-eval-", dir=shm))
    made = {"scratch": other / "out" / "secret.txt", "var_tmp": Path(f"/var/tmp/kagent-probe-{token}"),
            "opt": Path(f"/opt/kagent-probe-{token}"), "home": Path.home() / f"kagent-probe-{token}"}
    made["scratch"].parent.mkdir()
    try:
        for path in made.values():
            path.write_text(f"secret {token}\n")
            os.chmod(path, 0o644)
        yield made
    finally:
        shutil.rmtree(other, ignore_errors=True)
        for key in ("var_tmp", "opt", "home"):
            made[key].unlink(missing_ok=True)


def run(ws: Path) -> EvalResult:
    config = EvalConfig(backend="cpu", sandbox=SandboxConfig(), static_checks=False, log_chars=30000)
    return anyio.run(lambda: evaluate(RELU, ws, mode="test", config=config))


@needs_bwrap
@pytest.mark.timeout(240)
def test_candidate_sees_none_of_the_hosts_files(tmp_path: Path, decoys: dict[str, Path]) -> None:
    """/etc, other evaluations' scratch, the project's tests/benchmarks/runtime/.git/solutions,
    /var/tmp, /opt, $HOME and /home are not there, /proc cannot be written; the harness, its workspace copy and /usr are."""
    wanted = probes(decoys)
    ws = tmp_path / "ws"
    shutil.copytree(FIXTURES / "relu_cpu", ws)
    (ws / "model_new.py").write_text(PROBE.replace("@PROBES@", repr(wanted)))
    r = run(ws)
    assert r.correct and r.error is None and r.flags == [], (r.error, r.flags, r.log[-3000:])
    seen = lines(r)
    for kind, path in wanted[:-6]:
        assert seen[f"{kind} {path}"].startswith("DENIED"), (kind, path, seen[f"{kind} {path}"])
    assert set(listing(seen[f"list {ROOT}"])) <= {"skills", ".venv"}, seen[f"list {ROOT}"]
    assert set(listing(seen["list /etc"])) <= {"alternatives", "ld.so.cache", "ld.so.conf", "ld.so.conf.d"}
    home = Path.home()
    # $HOME holds only the way down to the interpreter where it lives there (pyenv, say).
    interpreter = {p.relative_to(home).parts[0] for p in needed_roots() if p.is_relative_to(home)}
    assert set(listing(seen[f"list {home}"])) <= interpreter, seen[f"list {home}"]
    for kind, path in wanted[-3:]:
        assert seen[f"{kind} {path}"].startswith("ALLOWED"), (kind, path, seen[f"{kind} {path}"])
    assert decoys["opt"].read_text().strip() not in r.log  # every decoy holds the same secret line


@needs_bwrap
@pytest.mark.timeout(240)
def test_fair_workspace_still_passes(tmp_path: Path) -> None:
    ws = tmp_path / "relu_cpu"
    shutil.copytree(FIXTURES / "relu_cpu", ws)
    r = run(ws)
    assert r.correct and r.error is None and r.flags == [], (r.error, r.flags, r.log[-3000:])
    assert r.sandbox is not None and r.sandbox.startswith("bwrap")


@needs_bwrap
def test_command_line_binds_no_root_and_only_the_harness(tmp_path: Path) -> None:
    """The root is an empty tmpfs; the project is bound as skills/ alone; the caller's extra
    read-only binds are honoured."""
    extra = tmp_path / "licence"
    extra.write_text("x")
    cmd = wrap(["true"], cfg=SandboxConfig(ro_binds=[str(extra)]), readable=[], writable=[], cwd=tmp_path,
               gpu=False, extensions=tmp_path)
    pairs = list(zip(cmd, cmd[1:], cmd[2:], strict=False))
    binds = {src for flag, src, _ in pairs if flag in ("--ro-bind", "--bind")}
    assert ("--ro-bind", "/", "/") not in pairs and cmd[1:3] == ["--tmpfs", "/"]
    assert str(ROOT / "skills") in binds and str(ROOT) not in binds
    assert str(extra) in binds
    assert not any(b.startswith(("/etc/host", "/etc/passwd", "/home", "/opt", "/var")) for b in binds), binds
    assert all(not str(p).startswith(str(ROOT / "tests")) for p in needed_roots())


def test_cuda_workers_see_nsight_compute_where_the_ncu_launcher_looks(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The toolkit's ncu is a launcher script that runs Nsight Compute from /opt/nvidia/nsight-compute
    or a nsight-compute* folder beside the toolkit's bin/: both are bound read-only for a cuda worker
    (the kernel audit and the profile skill run ncu in the sandbox), neither for a cpu one."""
    import skills.evaluator.sandbox as sb
    toolkit = tmp_path / "cuda-13.0"
    (toolkit / "bin").mkdir(parents=True)
    (toolkit / "nsight-compute-2025.3.1").mkdir()
    launcher = toolkit / "bin" / "ncu"
    launcher.write_text("#!/bin/sh\nexit 0\n")
    launcher.chmod(0o755)
    opt = tmp_path / "opt-nvidia-nsight-compute"
    opt.mkdir()
    monkeypatch.setenv("PATH", f"{toolkit / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(sb, "NSIGHT_COMPUTE_DIRS", (str(opt), str(tmp_path / "absent")))
    assert sb.nsight_compute_dirs() == [opt, toolkit / "nsight-compute-2025.3.1"]
    sb.cuda_paths.cache_clear()
    try:
        cfg = SandboxConfig(mode="bwrap", bwrap="/usr/bin/bwrap")
        gpu = wrap(["true"], cfg=cfg, readable=[], writable=[], cwd=tmp_path, gpu=True)
        cpu = wrap(["true"], cfg=cfg, readable=[], writable=[], cwd=tmp_path, gpu=False)
    finally:
        sb.cuda_paths.cache_clear()
    binds = {gpu[i + 1] for i, a in enumerate(gpu) if a == "--ro-bind"}
    assert {str(opt), str(toolkit / "nsight-compute-2025.3.1")} <= binds
    assert str(opt) not in cpu and str(toolkit / "nsight-compute-2025.3.1") not in cpu
