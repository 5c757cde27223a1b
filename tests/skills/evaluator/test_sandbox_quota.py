"""skills/evaluator/quota.py: the parent-side disk quota on the candidate's host-visible folders (EXPLOITS row
20), with real writer processes. The whole evaluation path (bubblewrap, out/ filled by a kernel) is
tests/skills/evaluator/test_exploits_cpu.py::test_disk_fill[row20-disk_fill_outputs]."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from skills.evaluator.quota import ENTRY_BYTES, DiskQuota, Unreadable, usage

MiB = 2**20

# Writes 1 MiB files into argv[1] (`count` of them, then sleeps), reporting each on stdout.
WRITER = """\
import os, sys, time
folder, count = sys.argv[1], int(sys.argv[2])
for i in range(count):
    with open(os.path.join(folder, f"f{i}.bin"), "wb") as f:
        f.write(os.urandom(1 << 20))
    print(i + 1, flush=True)
    time.sleep(0.005)
time.sleep(60)
"""


def start_writer(folder: Path, count: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", WRITER, str(folder), str(count)], stdout=subprocess.PIPE,
                            start_new_session=True)


def written(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.bin"))


async def watch_for(quota: DiskQuota, proc: subprocess.Popen[bytes], seconds: float) -> None:
    """Run the watcher (whose kill is the process group's) until it kills or `seconds` pass."""
    killed = anyio.Event()

    async def kill() -> None:
        os.killpg(proc.pid, signal.SIGKILL)
        killed.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(quota.watch, kill)
        with anyio.move_on_after(seconds):
            await killed.wait()
        quota.stop()


def reap(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    if proc.stdout is not None:
        proc.stdout.close()


def test_usage_counts_allocated_bytes_and_entries_not_links(tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(os.urandom(3 * MiB))
    (tmp_path / "sub" / "deeper").mkdir(parents=True)
    (tmp_path / "sub" / "deeper" / "b.bin").write_bytes(os.urandom(MiB))
    (tmp_path / "root").symlink_to("/")  # a link is an entry; what it points to is not counted
    with open(tmp_path / "sparse.bin", "wb") as f:
        f.truncate(4 * 2**30)  # 4 GiB long, nothing allocated: no RAM used
    used = usage([tmp_path, tmp_path / "missing"])
    assert 4 * MiB <= used <= 4 * MiB + 10 * ENTRY_BYTES + 64 * 1024, used
    assert usage([tmp_path], stop_above=MiB) <= 4 * MiB  # stops early once past


def test_usage_charges_a_page_per_entry(tmp_path: Path) -> None:
    for i in range(100):
        (tmp_path / f"empty{i}").touch()
    assert usage([tmp_path]) == 100 * ENTRY_BYTES


def test_unlistable_folder_is_over_the_quota(tmp_path: Path) -> None:
    """A folder the evaluator cannot list (here: nested past PATH_MAX) cannot be measured: it counts
    as over the quota rather than as empty."""
    fd = os.open(tmp_path, os.O_RDONLY)
    try:
        for _ in range(30):  # 30 * 200 characters > PATH_MAX (4096)
            os.mkdir("d" * 200, dir_fd=fd)
            new = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = new
    finally:
        os.close(fd)
    with pytest.raises(Unreadable, match="too long"):
        usage([tmp_path])
    quota = DiskQuota([tmp_path], 10**12)
    assert anyio.run(quota.check)
    assert quota.flag().name == "disk_quota" and "could not list" in quota.flag().detail


def test_quota_exceeded_kills_the_writer_and_flags(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = start_writer(out, 500)
    quota = DiskQuota([out, tmp_path / "tmp"], 16 * MiB, interval_s=0.02)
    try:
        anyio.run(watch_for, quota, proc, 10.0)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        reap(proc)
    assert quota.exceeded and quota.seen is not None and quota.seen > 16 * MiB
    assert written(out) < 100 * MiB, written(out)  # killed soon after it passed the quota, not at the end
    flag = quota.flag()
    assert flag.name == "disk_quota"
    assert "16 MiB disk quota" in flag.detail and "out/, tmp/" in flag.detail, flag.detail


def test_honest_writer_is_not_flagged(tmp_path: Path) -> None:
    """Outputs under the quota: the watch runs until stopped, flags nothing and kills nothing."""
    out = tmp_path / "out"
    out.mkdir()
    proc = start_writer(out, 8)
    quota = DiskQuota([out], 16 * MiB, interval_s=0.02)
    try:
        assert proc.stdout is not None
        while proc.stdout.readline().strip() != b"8":
            assert proc.poll() is None
        anyio.run(watch_for, quota, proc, 0.5)
        assert proc.poll() is None  # still alive: never killed
        assert not quota.exceeded and not anyio.run(quota.check)
    finally:
        reap(proc)
    assert written(out) == 8 * MiB
