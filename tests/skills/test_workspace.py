"""Workspace: layout, path rules (escapes, links, suffixes), limits, atomic writes, snapshot."""

from __future__ import annotations

import ast
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from skills.workspace import MODEL_NEW_TEMPLATE, Workspace, WorkspaceConfig, WorkspaceError

PROBLEM = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    with Workspace.create(
        PROBLEM, config=WorkspaceConfig(root=str(tmp_path / "root")), name_hint="t"
    ) as w:
        yield w


def small(tmp_path: Path, **limits: int) -> Workspace:
    return Workspace.create(PROBLEM, config=WorkspaceConfig(root=str(tmp_path / "root"), **limits))


# -- layout ----------------------------------------------------------------------------------


def test_create_layout(tmp_path: Path) -> None:
    cfg = WorkspaceConfig(root=str(tmp_path / "root"))
    a = Workspace.create(PROBLEM, config=cfg, name_hint="level1/19 ReLU!")
    b = Workspace.create(PROBLEM, config=cfg, name_hint="level1/19 ReLU!")
    assert a.path != b.path
    assert a.path.parent == (tmp_path / "root").resolve()
    assert a.path.name.startswith("level1-19-ReLU-")
    assert a.model_path.read_text() == PROBLEM
    assert stat.S_IMODE(a.model_path.stat().st_mode) == 0o444
    assert a.model_new_path.read_text() == MODEL_NEW_TEMPLATE
    assert a.kernels_dir.is_dir() and not any(a.kernels_dir.iterdir())
    a.cleanup()
    b.cleanup()


def test_template_is_python_with_modelnew_that_raises() -> None:
    tree = ast.parse(MODEL_NEW_TEMPLATE)
    classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
    assert [c.name for c in classes] == ["ModelNew"]
    assert "NotImplementedError" in MODEL_NEW_TEMPLATE
    assert "kagent.h" in MODEL_NEW_TEMPLATE and "KAGENT_EXPORT" in MODEL_NEW_TEMPLATE


def test_default_root_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    assert WorkspaceConfig().root == str(tmp_path / "state" / "kagent" / "workspaces")
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert WorkspaceConfig().root == str(tmp_path / "home/.local/state/kagent/workspaces")


def test_cleanup_removes_read_only_tree_and_is_idempotent(tmp_path: Path) -> None:
    ws = small(tmp_path)
    ws.write_text("kernels/a.cu", "x")
    # A subfolder cannot be written through the rules, but one planted by hand is still removed.
    (ws.kernels_dir / "sub").mkdir()
    (ws.kernels_dir / "sub" / "b.cu").write_text("x")
    (ws.kernels_dir / "sub" / "b.cu").chmod(0o444)
    (ws.kernels_dir / "sub").chmod(0o555)
    (ws.kernels_dir / "a.cu").chmod(0o444)
    ws.kernels_dir.chmod(0o555)
    ws.cleanup()
    assert not ws.path.exists()
    ws.cleanup()


def test_cleanup_does_not_touch_link_targets(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("keep")
    outside.chmod(0o444)
    ws = small(tmp_path)
    (ws.kernels_dir / "link.cu").symlink_to(outside)
    ws.cleanup()
    assert outside.read_text() == "keep"
    assert stat.S_IMODE(outside.stat().st_mode) == 0o444


def test_context_manager_cleans_up(tmp_path: Path) -> None:
    with small(tmp_path) as ws:
        path = ws.path
        assert path.is_dir()
    assert not path.exists()


def test_open_existing(ws: Workspace, tmp_path: Path) -> None:
    ws.write_text("kernels/a.cu", "int x;\n")
    again = Workspace.open(ws.path, config=ws.config)
    assert again.read_text("kernels/a.cu") == "int x;\n"
    with pytest.raises(WorkspaceError, match="not a folder"):
        Workspace.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(WorkspaceError, match="no model.py"):
        Workspace.open(tmp_path / "empty")


# -- path rules ------------------------------------------------------------------------------

BAD_PATHS = [
    ("../x", "'..'"),
    ("/etc/passwd", "absolute"),
    ("kernels/../../x", "'..'"),
    ("kernels/../model.py", "'..'"),
    ("~/x.cu", "absolute"),
    ("C:/x.cu", "absolute"),
    ("kernels\\a.cu", "'/'"),
    ("", "empty"),
    ("   ", "empty"),
    (".", "workspace itself"),
    ("kernels/a\x00.cu", "NUL"),
    ("kernels/.hidden.cu", "not an allowed"),
    ("kernels/-o.cu", "not an allowed"),
    ("kernels/a b.cu", "not an allowed"),
    ("kernels/" + "a" * 300 + ".cu", "longer than"),
    ("notes.txt", "outside"),
    ("build/a.cu", "outside"),
]


@pytest.mark.parametrize(("rel", "message"), BAD_PATHS)
@pytest.mark.parametrize("for_write", [False, True])
def test_bad_paths_refused(ws: Workspace, rel: str, message: str, for_write: bool) -> None:
    with pytest.raises(WorkspaceError, match=message):
        ws.resolve(rel, for_write=for_write)


def test_read_and_write_outside_are_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError):
        ws.read_text("/etc/passwd")
    with pytest.raises(WorkspaceError):
        ws.write_text("../escape.cu", "x")
    assert not (ws.path.parent / "escape.cu").exists()


def test_paths_are_normalised(ws: Workspace) -> None:
    assert ws.resolve("./kernels//a.cu", for_write=True) == ws.kernels_dir / "a.cu"
    assert ws.normalize("./kernels//a.cu") == "kernels/a.cu"


def test_model_py_read_only(ws: Workspace) -> None:
    assert ws.read_text("model.py") == PROBLEM
    with pytest.raises(WorkspaceError, match="read-only"):
        ws.write_text("model.py", "hacked")
    assert ws.model_path.read_text() == PROBLEM


def test_symlink_file_in_kernels_refused(ws: Workspace, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("secret")
    (ws.kernels_dir / "leak.cu").symlink_to(secret)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.read_text("kernels/leak.cu")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.write_text("kernels/leak.cu", "overwritten")
    assert secret.read_text() == "secret"


def test_symlink_folder_on_path_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "a.cu").write_text("outside")
    (ws.kernels_dir / "sub").symlink_to(outside, target_is_directory=True)
    # Reads may reach kernels/** and are stopped by the link; writes are refused as a subfolder
    # before the path is walked.
    with pytest.raises(WorkspaceError, match="kernels/sub is a symbolic link"):
        ws.read_text("kernels/sub/a.cu")
    with pytest.raises(WorkspaceError, match="kernels/sub/a.cu is in a subfolder"):
        ws.write_text("kernels/sub/a.cu", "overwritten")
    with pytest.raises(WorkspaceError, match="kernels/sub/b.cu is in a subfolder"):
        ws.write_text("kernels/sub/b.cu", "x")
    # A linked folder named like a source file is a top-level name: the link check refuses it.
    (ws.kernels_dir / "dir.cu").symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="kernels/dir.cu is a symbolic link"):
        ws.write_text("kernels/dir.cu", "x")
    with pytest.raises(WorkspaceError, match="kernels/dir.cu is a symbolic link"):
        ws.read_text("kernels/dir.cu/a.cu")
    assert sorted(p.name for p in outside.iterdir()) == ["a.cu"]
    assert (outside / "a.cu").read_text() == "outside"


def test_kernels_folder_itself_a_link_refused(ws: Workspace, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    ws.kernels_dir.rmdir()
    ws.kernels_dir.symlink_to(outside, target_is_directory=True)
    with pytest.raises(WorkspaceError, match="kernels is a symbolic link"):
        ws.write_text("kernels/a.cu", "x")
    assert not any(outside.iterdir())
    (outside / "planted.cu").write_text("x")
    with pytest.raises(WorkspaceError, match="kernels is a symbolic link"):
        ws.read_text("kernels/planted.cu")
    names = [rel for rel, _ in ws.list()]
    assert names == ["model.py", "model_new.py"]  # files behind the link are not listed


def test_model_new_link_refused(ws: Workspace, tmp_path: Path) -> None:
    target = tmp_path / "t.py"
    target.write_text("x")
    ws.model_new_path.unlink()
    ws.model_new_path.symlink_to(target)
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.read_text("model_new.py")
    with pytest.raises(WorkspaceError, match="symbolic link"):
        ws.write_text("model_new.py", "y")
    assert target.read_text() == "x"


def test_fifo_is_refused_without_hanging(ws: Workspace) -> None:
    os.mkfifo(ws.kernels_dir / "pipe.cu")
    with pytest.raises(WorkspaceError, match="not a regular file"):
        ws.read_text("kernels/pipe.cu")
    with pytest.raises(WorkspaceError, match="special file"):
        ws.write_text("kernels/pipe.cu", "x")


def test_reading_a_folder_or_missing_file(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="is a folder"):
        ws.read_text("kernels")
    with pytest.raises(WorkspaceError, match="does not exist"):
        ws.read_text("kernels/missing.cu")


@pytest.mark.parametrize("suffix", [".cu", ".cuh", ".cpp", ".h", ".hpp"])
def test_allowed_suffixes(ws: Workspace, suffix: str) -> None:
    assert ws.write_text(f"kernels/a{suffix}", "x") == 1
    assert ws.read_text(f"kernels/a{suffix}") == "x"


@pytest.mark.parametrize("name", ["a.cc", "a.py", "a.txt", "a.so", "Makefile", "a.cu.bak"])
def test_other_suffixes_refused(ws: Workspace, name: str) -> None:
    with pytest.raises(WorkspaceError, match=r"must end in \.cu") as info:
        ws.write_text(f"kernels/{name}", "x")
    # The listed suffixes are exactly the allowed ones (no .cc).
    assert str(info.value).endswith("must end in .cu, .cuh, .cpp, .h, .hpp")
    assert not (ws.kernels_dir / name).exists()


def test_write_targets(ws: Workspace) -> None:
    ws.write_text("model_new.py", "class ModelNew: ...\n")
    ws.write_text("kernels/util.cuh", "#pragma once\n")
    assert (ws.kernels_dir / "util.cuh").is_file()
    with pytest.raises(WorkspaceError, match="kernels/sub/a.cu is in a subfolder"):
        ws.write_text("kernels/sub/a.cu", "x")
    with pytest.raises(WorkspaceError, match="subfolder: put every source directly in kernels/"):
        ws.resolve("kernels/common/util.cuh", for_write=True)
    with pytest.raises(WorkspaceError, match="kernels/a/b/c.cu is in a subfolder"):
        ws.write_text("kernels/a/b/c.cu", "x")
    assert not (ws.kernels_dir / "sub").exists() and not (ws.kernels_dir / "a").exists()
    with pytest.raises(WorkspaceError, match="is a folder"):
        ws.write_text("kernels", "x")
    with pytest.raises(WorkspaceError, match="outside"):
        ws.write_text("model_new.cu", "x")
    with pytest.raises(WorkspaceError, match="provided by the harness"):
        ws.write_text("kernels/kagent.h", "#define KAGENT_EXPORT\n")
    ws.write_text("kernels/top.cuh", "x")
    with pytest.raises(WorkspaceError, match="kernels/top.cuh/x.cu is in a subfolder"):
        ws.write_text("kernels/top.cuh/x.cu", "x")
    with pytest.raises(WorkspaceError, match="kernels/top.cuh is not a folder"):
        ws.read_text("kernels/top.cuh/x.cu")
    assert ws.read_text("kernels/top.cuh") == "x"


# -- limits ----------------------------------------------------------------------------------


def test_max_file_bytes(tmp_path: Path) -> None:
    ws = small(tmp_path, max_file_bytes=100)
    assert ws.write_text("kernels/a.cu", "x" * 100) == 100
    with pytest.raises(WorkspaceError, match="at most 100 bytes"):
        ws.write_text("kernels/b.cu", "x" * 101)
    # Bytes, not characters: 34 three-byte characters are 102 bytes.
    with pytest.raises(WorkspaceError, match="102 bytes"):
        ws.write_text("kernels/b.cu", "\u20ac" * 34)
    assert not (ws.kernels_dir / "b.cu").exists()
    ws.cleanup()


def test_max_files(tmp_path: Path) -> None:
    ws = small(tmp_path, max_files=3)  # model_new.py counts as one
    ws.write_text("kernels/a.cu", "a")
    ws.write_text("kernels/b.cu", "b")
    with pytest.raises(WorkspaceError, match="holds 3 files, the limit is 3"):
        ws.write_text("kernels/c.cu", "c")
    ws.write_text("kernels/a.cu", "overwriting is fine")
    ws.cleanup()


def test_quota_counts_the_replaced_file(tmp_path: Path) -> None:
    ws = small(tmp_path, quota_bytes=100)
    ws.write_text("model_new.py", "")
    ws.write_text("kernels/a.cu", "x" * 60)
    ws.write_text("kernels/a.cu", "x" * 90)  # 90 in all: the old 60 bytes are replaced
    assert ws.usage() == 90
    with pytest.raises(WorkspaceError, match="over the quota of 100 bytes"):
        ws.write_text("kernels/b.cu", "x" * 20)
    ws.write_text("kernels/b.cu", "x" * 10)
    assert ws.usage() == 100
    ws.cleanup()


# -- reading and writing ---------------------------------------------------------------------


def test_non_utf8_read(ws: Workspace) -> None:
    (ws.kernels_dir / "bin.cu").write_bytes(b"ok\n\xff\xfe")
    with pytest.raises(WorkspaceError, match=r"not UTF-8 text \(byte 0xff at offset 3\)"):
        ws.read_text("kernels/bin.cu")


def test_unencodable_text_refused(ws: Workspace) -> None:
    with pytest.raises(WorkspaceError, match="not valid text"):
        ws.write_text("kernels/a.cu", "bad \ud800 surrogate")
    assert not (ws.kernels_dir / "a.cu").exists()


def test_utf8_round_trip(ws: Workspace) -> None:
    text = "// \u00fcnicode \u2713\r\nint x;\n"
    assert ws.write_text("kernels/u.cu", text) == len(text.encode())
    assert ws.read_text("kernels/u.cu") == text


def test_write_is_atomic_replace(ws: Workspace) -> None:
    ws.write_text("kernels/a.cu", "old")
    path = ws.kernels_dir / "a.cu"
    inode = path.stat().st_ino
    with path.open() as reader:
        ws.write_text("kernels/a.cu", "new")
        assert reader.read() == "old"  # a reader of the old file never sees a partial write
    assert path.read_text() == "new"
    assert path.stat().st_ino != inode
    assert sorted(p.name for p in ws.kernels_dir.iterdir()) == ["a.cu"]  # no temp files left
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_failed_write_keeps_old_content(tmp_path: Path) -> None:
    ws = small(tmp_path, max_file_bytes=10)
    ws.write_text("kernels/a.cu", "old")
    with pytest.raises(WorkspaceError):
        ws.write_text("kernels/a.cu", "x" * 11)
    assert ws.read_text("kernels/a.cu") == "old"
    assert sorted(p.name for p in ws.kernels_dir.iterdir()) == ["a.cu"]
    ws.cleanup()


def test_list_and_usage(ws: Workspace, tmp_path: Path) -> None:
    ws.write_text("model_new.py", "m" * 5)
    ws.write_text("kernels/b.cu", "b" * 3)
    ws.write_text("kernels/a.cuh", "a" * 2)
    (tmp_path / "out.cu").write_text("zzz")
    (ws.kernels_dir / "link.cu").symlink_to(tmp_path / "out.cu")
    (tmp_path / "outdir").mkdir()
    (tmp_path / "outdir" / "c.cu").write_text("cccc")
    (ws.kernels_dir / "linkdir").symlink_to(tmp_path / "outdir", target_is_directory=True)
    assert ws.list() == [
        ("kernels/a.cuh", 2),
        ("kernels/b.cu", 3),
        ("model.py", len(PROBLEM)),
        ("model_new.py", 5),
    ]
    assert ws.usage() == 10


def test_snapshot_copies_regular_files_only(ws: Workspace, tmp_path: Path) -> None:
    ws.write_text("model_new.py", "new")
    ws.write_text("kernels/a.cu", "a")
    ws.write_text("kernels/b.cuh", "b")
    (tmp_path / "secret").write_text("s")
    (ws.kernels_dir / "link.cu").symlink_to(tmp_path / "secret")
    (tmp_path / "secretdir").mkdir()
    (tmp_path / "secretdir" / "c.cu").write_text("s")
    (ws.kernels_dir / "linkdir").symlink_to(tmp_path / "secretdir", target_is_directory=True)
    snap = ws.snapshot(tmp_path / "snap")
    assert snap.path == (tmp_path / "snap").resolve()
    assert snap.list() == ws.list()
    assert [rel for rel, _ in snap.list()] == [
        "kernels/a.cu",
        "kernels/b.cuh",
        "model.py",
        "model_new.py",
    ]
    assert sorted(p.name for p in snap.kernels_dir.iterdir()) == ["a.cu", "b.cuh"]
    assert not any(p.is_symlink() for p in snap.path.rglob("*"))
    assert snap.read_text("kernels/b.cuh") == "b"
    assert stat.S_IMODE(snap.model_path.stat().st_mode) == 0o444
    ws.write_text("kernels/a.cu", "changed")
    assert snap.read_text("kernels/a.cu") == "a"
    with pytest.raises(FileExistsError):
        ws.snapshot(tmp_path / "snap")
    snap.cleanup()


def test_snapshot_of_workspace_without_kernels(ws: Workspace, tmp_path: Path) -> None:
    ws.kernels_dir.rmdir()
    ws.model_new_path.unlink()
    snap = ws.snapshot(tmp_path / "snap")
    assert snap.list() == [("model.py", len(PROBLEM))]
    assert snap.kernels_dir.is_dir()
    ws.write_text("kernels/a.cu", "recreated")  # write_text recreates kernels/
    assert ws.read_text("kernels/a.cu") == "recreated"
