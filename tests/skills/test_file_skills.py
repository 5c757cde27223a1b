"""File skills through call_skill; tool schemas; argument decoding; truncation; the registry."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import msgspec
import pytest

import skills.files as files
from skills.base import (
    SKILLS,
    SkillArgs,
    SkillContext,
    SkillNotFound,
    SkillResult,
    call_skill,
    get_skill,
    register,
    tool_schema,
    tool_schemas,
    truncate,
)
from skills.workspace import Workspace, WorkspaceConfig, WorkspaceError

FILE_SKILLS = ["read_file", "write_file", "edit_file", "list_files"]
PROBLEM = "import torch\n\nclass Model(torch.nn.Module):\n    pass\n"


@pytest.fixture
def ws(tmp_path: Path) -> Iterator[Workspace]:
    cfg = WorkspaceConfig(root=str(tmp_path / "root"), quota_bytes=10_000, max_files=8)
    with Workspace.create(PROBLEM, config=cfg) as w:
        yield w


def call(ws: Workspace, name: str, args: str | dict[str, Any], limit: int = 8000) -> SkillResult:
    ctx = SkillContext(workspace=ws, max_output_chars=limit)
    return anyio.run(call_skill, name, args, ctx)


# -- read_file -------------------------------------------------------------------------------


def test_read_file_line_numbers_and_offsets(ws: Workspace) -> None:
    ws.write_text("kernels/a.cu", "".join(f"line{i}\n" for i in range(1, 11)))
    r = call(ws, "read_file", {"path": "kernels/a.cu", "offset_line": 3, "max_lines": 2})
    assert r.ok
    lines = r.text.splitlines()
    assert lines[0] == "kernels/a.cu: lines 3-4 of 10"
    assert lines[1:3] == ["   3| line3", "   4| line4"]
    assert "6 more lines" in lines[3] and "offset_line=5" in lines[3]
    assert r.record == files.ReadFileRecord(
        path="kernels/a.cu", first_line=3, last_line=4, total_lines=10, bytes=61
    )
    r = call(ws, "read_file", '{"path": "./kernels/a.cu", "offset_line": 9}')
    assert r.text.splitlines()[1:] == ["   9| line9", "  10| line10", "[end of file]"]


def test_read_file_model_and_offset_past_end(ws: Workspace) -> None:
    r = call(ws, "read_file", {"path": "model.py"})
    assert r.ok and "   3| class Model(torch.nn.Module):" in r.text
    r = call(ws, "read_file", {"path": "model.py", "offset_line": 99})
    assert not r.ok and "has 4 lines" in r.text


def test_read_file_empty_and_no_final_newline(ws: Workspace) -> None:
    ws.write_text("kernels/e.cu", "")
    r = call(ws, "read_file", {"path": "kernels/e.cu"})
    assert r.ok and "is empty" in r.text
    ws.write_text("kernels/n.cu", "a\n\nb")
    r = call(ws, "read_file", {"path": "kernels/n.cu"})
    assert r.text.splitlines()[1:4] == ["   1| a", "   2| ", "   3| b"]


def test_read_file_pages_by_whole_lines_within_output_limit(ws: Workspace) -> None:
    ws.write_text("kernels/big.cu", "".join(f"{i:04d} " + "x" * 60 + "\n" for i in range(1, 101)))
    r = call(ws, "read_file", {"path": "kernels/big.cu"}, limit=2000)
    assert r.ok and len(r.text) <= 2000 and "characters cut" not in r.text
    record = r.record
    assert isinstance(record, files.ReadFileRecord)
    assert 10 < record.last_line < 100
    assert f"offset_line={record.last_line + 1}" in r.text.splitlines()[-1]
    assert r.text.splitlines()[-2].startswith(f"{record.last_line:>4}| {record.last_line:04d} ")


def test_read_file_refusals(ws: Workspace, tmp_path: Path) -> None:
    (tmp_path / "secret").write_text("secret")
    (ws.kernels_dir / "s.cu").symlink_to(tmp_path / "secret")
    (ws.kernels_dir / "bin.cu").write_bytes(b"\xff")
    for path, message in [
        ("/etc/passwd", "absolute"),
        ("../x", "'..'"),
        ("kernels/s.cu", "symbolic link"),
        ("kernels/bin.cu", "not UTF-8"),
        ("kernels/none.cu", "does not exist"),
    ]:
        r = call(ws, "read_file", {"path": path})
        assert not r.ok and message in r.text and "secret" not in r.text.replace("s.cu", "")
        assert r.record is None


# -- write_file / edit_file ------------------------------------------------------------------


def test_write_file(ws: Workspace) -> None:
    r = call(ws, "write_file", {"path": "kernels/a.cu", "content": "int x;\n"})
    assert r.ok and r.text == "wrote 7 bytes to kernels/a.cu"
    assert r.record == files.WriteFileRecord(path="kernels/a.cu", bytes=7, created=True)
    r = call(ws, "write_file", {"path": "./kernels//a.cu", "content": "int y;\n"})
    assert r.record == files.WriteFileRecord(path="kernels/a.cu", bytes=7, created=False)
    assert (ws.kernels_dir / "a.cu").read_text() == "int y;\n"


def test_write_file_refusals(ws: Workspace) -> None:
    r = call(ws, "write_file", {"path": "model.py", "content": "hacked"})
    assert not r.ok and "read-only" in r.text
    assert ws.model_path.read_text() == PROBLEM
    r = call(ws, "write_file", {"path": "kernels/a.py", "content": "x"})
    assert not r.ok and ".cu" in r.text
    r = call(ws, "write_file", {"path": "kernels/a.cc", "content": "x"})
    assert not r.ok and "must end in .cu" in r.text and r.record is None
    assert not (ws.kernels_dir / "a.cc").exists()
    r = call(ws, "write_file", {"path": "kernels/sub/a.cu", "content": "x"})
    assert not r.ok and r.record is None
    assert r.text == (
        "write_file: kernels/sub/a.cu is in a subfolder: put every source directly in kernels/"
    )
    assert not (ws.kernels_dir / "sub").exists()
    r = call(ws, "write_file", {"path": "kernels/a.cu", "content": "x" * 10_001})
    assert not r.ok and "over the quota of 10000 bytes" in r.text
    assert not (ws.kernels_dir / "a.cu").exists()


def test_edit_file_matches(ws: Workspace) -> None:
    ws.write_text("kernels/a.cu", "int a = 1;\nint b = 1;\nint c = 2;\n")
    r = call(ws, "edit_file", {"path": "kernels/a.cu", "old": "= 3", "new": "= 4"})
    assert not r.ok and "not found" in r.text
    r = call(ws, "edit_file", {"path": "kernels/a.cu", "old": "= 1", "new": "= 5"})
    assert not r.ok and "occurs 2 times" in r.text and "replace_all" in r.text
    assert ws.read_text("kernels/a.cu") == "int a = 1;\nint b = 1;\nint c = 2;\n"
    r = call(ws, "edit_file", {"path": "kernels/a.cu", "old": "int c = 2;", "new": "int c = 3;"})
    assert r.ok and "replaced 1 occurrence in kernels/a.cu (first at line 3)" in r.text
    assert r.record == files.EditFileRecord(
        path="kernels/a.cu", replacements=1, first_line=3, bytes=33
    )
    r = call(
        ws, "edit_file", {"path": "kernels/a.cu", "old": "= 1", "new": "= 7", "replace_all": True}
    )
    assert r.ok and "replaced 2 occurrences" in r.text
    assert ws.read_text("kernels/a.cu") == "int a = 7;\nint b = 7;\nint c = 3;\n"


def test_edit_file_refusals(ws: Workspace) -> None:
    r = call(ws, "edit_file", {"path": "model.py", "old": "Model", "new": "Hacked"})
    assert not r.ok and "read-only" in r.text
    assert ws.model_path.read_text() == PROBLEM
    ws.write_text("kernels/a.cu", "abc")
    r = call(ws, "edit_file", {"path": "kernels/a.cu", "old": "", "new": "x"})
    assert not r.ok and "empty" in r.text
    r = call(ws, "edit_file", {"path": "kernels/missing.cu", "old": "a", "new": "b"})
    assert not r.ok and "does not exist" in r.text
    (ws.kernels_dir / "sub").mkdir()  # planted by hand: readable, but never writable
    (ws.kernels_dir / "sub" / "a.cu").write_text("abc")
    r = call(ws, "edit_file", {"path": "kernels/sub/a.cu", "old": "a", "new": "x"})
    assert not r.ok and "kernels/sub/a.cu is in a subfolder" in r.text and r.record is None
    assert (ws.kernels_dir / "sub" / "a.cu").read_text() == "abc"


# -- list_files ------------------------------------------------------------------------------


def test_list_files(ws: Workspace) -> None:
    r = call(ws, "list_files", "")
    assert r.ok and "kernels/ (empty)" in r.text
    ws.write_text("model_new.py", "m" * 100)
    ws.write_text("kernels/a.cu", "a" * 1234)
    r = call(ws, "list_files", "{}")
    lines = r.text.splitlines()
    assert lines[0].split() == ["1,234", "B", "kernels/a.cu"]
    assert lines[1].split()[:3] == [str(len(PROBLEM)), "B", "model.py"] and "read-only" in lines[1]
    assert lines[2].split() == ["100", "B", "model_new.py"]
    assert lines[3].startswith("quota: 1,334 of 10,000 bytes used, 2 of 8 files")
    assert r.record == files.ListFilesRecord(
        files=[("kernels/a.cu", 1234), ("model.py", len(PROBLEM)), ("model_new.py", 100)],
        usage_bytes=1334,
        quota_bytes=10_000,
    )


# -- schemas ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FILE_SKILLS)
def test_tool_schema_is_flat_and_complete(name: str) -> None:
    skill = get_skill(name)
    schema = tool_schema(skill)
    dumped = json.dumps(schema)
    assert "$ref" not in dumped and "$defs" not in dumped
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == name and fn["description"].strip()
    params = fn["parameters"]
    assert params["type"] == "object" and params["additionalProperties"] is False
    fields = msgspec.structs.fields(skill.Args)
    assert set(params["properties"]) == {f.name for f in fields}
    assert params["required"] == [f.name for f in fields if f.required]
    for prop in params["properties"].values():
        assert prop["description"].strip() and prop["type"] in {"string", "integer", "boolean"}


def test_tool_schema_required_fields() -> None:
    required = {
        n: tool_schema(get_skill(n))["function"]["parameters"]["required"] for n in FILE_SKILLS
    }
    assert required == {
        "read_file": ["path"],
        "write_file": ["path", "content"],
        "edit_file": ["path", "old", "new"],
        "list_files": [],
    }


class _Inner(msgspec.Struct):
    """A nested object."""

    size: Annotated[int, msgspec.Meta(description="a size")]


class _NestedArgs(SkillArgs):
    inner: Annotated[_Inner, msgspec.Meta(description="nested")]
    mode: Literal["a", "b"] = "a"
    many: list[_Inner] = []


class _NestedSkill:
    name = "nested_test"
    description = "Test skill with nested arguments."
    Args = _NestedArgs

    async def run(self, args: Any, ctx: SkillContext) -> SkillResult:
        return SkillResult(text="ran", ok=True)


def test_tool_schema_inlines_nested_refs() -> None:
    params = tool_schema(_NestedSkill())["function"]["parameters"]
    assert "$ref" not in json.dumps(params) and "$defs" not in json.dumps(params)
    assert params["properties"]["inner"]["properties"]["size"]["type"] == "integer"
    assert params["properties"]["inner"]["description"] == "nested"
    assert params["properties"]["many"]["items"]["type"] == "object"
    assert params["properties"]["mode"]["enum"] == ["a", "b"]
    assert params["required"] == ["inner"]


def test_tool_schemas_selection() -> None:
    assert [s["function"]["name"] for s in tool_schemas(["write_file", "read_file"])] == [
        "write_file",
        "read_file",
    ]
    names = [s["function"]["name"] for s in tool_schemas()]
    assert set(FILE_SKILLS) <= set(names) and names == sorted(names)
    with pytest.raises(SkillNotFound):
        tool_schemas(["nope"])


# -- call_skill: bad model input never raises ------------------------------------------------

BAD_CALLS = [
    ("read_file", '{"path": "model.py"', "not valid JSON"),
    ("read_file", "not json at all", "not valid JSON"),
    ("read_file", '{"path": 3}', "Expected `str`, got `int` - at `$.path`"),
    ("read_file", '{"path": "model.py", "offset_line": "2"}', "`$.offset_line`"),
    ("read_file", '{"path": "model.py", "offset_line": 0}', ">= 1"),
    ("read_file", '{"path": "model.py", "colour": "red"}', "unknown field `colour`"),
    ("read_file", "{}", "missing required field `path`"),
    ("read_file", "[1, 2]", "Expected `object`, got `array`"),
    ("read_file", {"path": ["model.py"]}, "Expected `str`, got `array`"),
    ("edit_file", {"path": "kernels/a.cu", "old": "a", "new": "b", "replace_all": "yes"}, "bool"),
    ("list_files", '{"verbose": true}', "unknown field `verbose`"),
]


@pytest.mark.parametrize(("name", "args", "message"), BAD_CALLS)
def test_call_skill_bad_arguments(
    ws: Workspace, name: str, args: str | dict[str, Any], message: str
) -> None:
    r = call(ws, name, args)
    assert not r.ok and r.record is None
    assert message in r.text
    assert r.text.startswith(f"{name}: ")
    if name == "read_file":
        assert "path (string, required)" in r.text and "offset_line (integer, default 1)" in r.text


def test_call_skill_unknown_skill(ws: Workspace) -> None:
    r = call(ws, "rm_rf", "{}")
    assert not r.ok and "unknown skill 'rm_rf'" in r.text
    assert all(n in r.text for n in FILE_SKILLS)


def test_call_skill_truncates_and_times(ws: Workspace) -> None:
    ws.write_text("kernels/a.cu", "y" * 5000)
    r = call(ws, "read_file", {"path": "kernels/a.cu"}, limit=300)
    assert r.ok and len(r.text) == 300 and "characters cut" in r.text
    assert r.seconds > 0


def test_call_skill_propagates_bugs(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    class Boom:
        name = "boom_test"
        description = "Raises."
        Args = files.ListFilesArgs

        async def run(self, args: Any, ctx: SkillContext) -> SkillResult:
            raise RuntimeError("a bug")

    class Refused(Boom):
        name = "refused_test"

        async def run(self, args: Any, ctx: SkillContext) -> SkillResult:
            raise WorkspaceError("refused politely")

    monkeypatch.setitem(SKILLS, "boom_test", Boom())
    monkeypatch.setitem(SKILLS, "refused_test", Refused())
    with pytest.raises(RuntimeError, match="a bug"):
        call(ws, "boom_test", "{}")
    r = call(ws, "refused_test", "{}")
    assert not r.ok and r.text == "refused_test: refused politely"


# -- registry --------------------------------------------------------------------------------


def test_registry() -> None:
    assert get_skill("read_file") is files.READ_FILE
    with pytest.raises(KeyError) as info:
        get_skill("nope")
    assert isinstance(info.value, SkillNotFound)
    assert str(info.value).startswith("unknown skill 'nope'; valid skills: ")
    with pytest.raises(ValueError, match="already registered"):
        register(files.ReadFile())
    assert register(files.READ_FILE) is files.READ_FILE  # re-registering the same object is fine

    class Loose(msgspec.Struct):
        x: int = 0

    class LooseSkill:
        name = "loose_test"
        description = "Arguments that admit unknown fields."
        Args = Loose

        async def run(self, args: Any, ctx: SkillContext) -> SkillResult:
            return SkillResult(text="", ok=True)

    with pytest.raises(TypeError, match="forbid unknown fields"):
        register(LooseSkill())

    class BadName(_NestedSkill):
        name = "bad name"

    with pytest.raises(ValueError, match="must match"):
        register(BadName())
    assert "loose_test" not in SKILLS and "bad name" not in SKILLS


# -- truncate --------------------------------------------------------------------------------


def test_truncate_exact_limit() -> None:
    for length in [0, 1, 50, 99, 100, 101, 1000, 123_456]:
        text = "".join(chr(65 + i % 26) for i in range(length))
        for limit in [0, 1, 5, 20, 31, 32, 33, 40, 99, 100, 1000, 10_000]:
            out = truncate(text, limit)
            if length <= limit:
                assert out == text
                continue
            assert len(out) == limit
            if "characters cut" in out:
                head, rest = out.split("\n[... ", 1)
                count, tail = rest.split(" characters cut ...]\n", 1)
                assert text.startswith(head) and text.endswith(tail)
                assert int(count) == length - len(head) - len(tail)
                assert abs(len(head) - len(tail)) <= 1
            else:
                assert out == text[:limit]  # too small for the marker


def test_truncate_marker_shape() -> None:
    out = truncate("a" * 100 + "b" * 100, 60)
    assert out.startswith("a") and out.endswith("b")
    assert "\n[... 170 characters cut ...]\n" in out
