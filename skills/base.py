"""The skill protocol, the registry, OpenAI tool schemas, and the one safe way to call a skill.

A skill is an object with `name`, `description`, an `Args` Struct (subclass `SkillArgs`) and an
async `run(args, ctx) -> SkillResult`. Register an instance with `register`; the runtime calls
skills only through `call_skill`, which turns bad model input into an `ok=False` result.
"""

from __future__ import annotations

import dataclasses
import re
import time
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import msgspec

from skills.snapshots import Snapshots
from skills.workspace import Workspace, WorkspaceError

if TYPE_CHECKING:
    from skills.evaluator.api import Evaluator

DEFAULT_MAX_OUTPUT_CHARS = 8000
_CUT_MARKER = "\n[... {} characters cut ...]\n"
# OpenAI's rule for function names.
_SKILL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class SkillArgs(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Base of every skill's arguments: keyword-only, and unknown fields are an error."""


class SkillResult(msgspec.Struct, kw_only=True):
    """What one skill call returns.

    text: what the model sees (already truncated by call_skill).
    ok: False when the call failed (bad arguments, refused path, compile error, ...).
    record: structured record for the store, typed per skill; None when there is none.
    ends_episode: True when this call ends the episode (submit).
    seconds: wall time of the call, measured by call_skill.
    """

    text: str
    ok: bool
    record: msgspec.Struct | None = None
    ends_episode: bool = False
    seconds: float = 0.0


@dataclasses.dataclass(kw_only=True, slots=True)
class SkillContext:
    """What a skill may use besides its arguments (built by the runtime, never serialised).

    workspace: the episode's workspace.
    max_output_chars: text returned to the model is truncated to this many characters.
    evaluator: set by the runtime for compile/run_tests/profile/ncu/submit; None otherwise.
    snapshots: the copies run_tests/profile graded and the last one that passed (for
        profile(against="last_passing")); the episode removes them when it ends.
    """

    workspace: Workspace
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    evaluator: Evaluator | None = None
    snapshots: Snapshots = dataclasses.field(default_factory=Snapshots)


class Skill(Protocol):
    """A tool the agent can call."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def Args(self) -> type[msgspec.Struct]: ...

    async def run(self, args: Any, ctx: SkillContext) -> SkillResult: ...


class SkillNotFound(KeyError):
    """No skill of that name; the message lists the valid ones."""

    def __init__(self, name: str, valid: list[str]) -> None:
        super().__init__(name)
        self.name = name
        self.valid = valid

    def __str__(self) -> str:
        return f"unknown skill {self.name!r}; valid skills: {', '.join(self.valid)}"


SKILLS: dict[str, Skill] = {}
S = TypeVar("S", bound=Skill)


def register(skill: S) -> S:
    """Add a skill instance to `SKILLS` (checked: name, description, Args) and return it."""
    name = skill.name
    if not _SKILL_NAME.fullmatch(name):
        raise ValueError(f"skill name {name!r} must match {_SKILL_NAME.pattern}")
    if name in SKILLS and SKILLS[name] is not skill:
        raise ValueError(f"a skill named {name!r} is already registered")
    if not skill.description.strip():
        raise ValueError(f"skill {name!r} has no description")
    args = skill.Args
    if not (isinstance(args, type) and issubclass(args, msgspec.Struct)):
        raise TypeError(f"{name}.Args must be a msgspec.Struct subclass")
    if not args.__struct_config__.forbid_unknown_fields:
        raise TypeError(f"{name}.Args must forbid unknown fields (subclass SkillArgs)")
    tool_schema(skill)  # fails now, not at the first episode, if the Args can't be described
    SKILLS[name] = skill
    return skill


def get_skill(name: str) -> Skill:
    """The registered skill called `name`; SkillNotFound lists the valid names otherwise."""
    try:
        return SKILLS[name]
    except KeyError:
        raise SkillNotFound(name, sorted(SKILLS)) from None


def tool_schema(skill: Skill) -> dict[str, Any]:
    """The OpenAI `tools` entry for a skill: a flat JSON-schema object (no $ref / $defs)."""
    raw = msgspec.json.schema(skill.Args)
    params = _inline_refs(raw, raw.get("$defs", {}), ())
    params.pop("title", None)
    params.pop("description", None)  # the Args docstring; the function description says it
    params["type"] = "object"
    params.setdefault("properties", {})
    params["required"] = list(params.get("required", []))
    params["additionalProperties"] = False
    return {
        "type": "function",
        "function": {"name": skill.name, "description": skill.description, "parameters": params},
    }


def offered(skill: Skill, backend: str | None) -> bool:
    """Whether an episode on `backend` offers the skill: a skill may name the backends it works on
    in a `backends` attribute (ncu: cuda only), so no tool is listed that can only answer that it
    cannot run here; None (no backend given) offers every skill."""
    backends: tuple[str, ...] | None = getattr(skill, "backends", None)
    return backend is None or backends is None or backend in backends


def tool_schemas(names: list[str] | None = None, *, backend: str | None = None) -> list[dict[str, Any]]:
    """Tool entries for `names` (in that order), or for every registered skill sorted by name;
    with a `backend`, only the skills offered on it."""
    chosen = sorted(SKILLS) if names is None else names
    skills = [get_skill(n) for n in chosen]
    return [tool_schema(s) for s in skills if offered(s, backend)]


async def call_skill(name: str, arguments: str | dict[str, Any], ctx: SkillContext) -> SkillResult:
    """Decode `arguments` (JSON text or a parsed object) and run the skill.

    Bad model input (unknown skill, malformed JSON, wrong or unknown fields, a refused
    workspace operation) gives ok=False with a readable text; other exceptions are bugs and
    propagate. The text is truncated to ctx.max_output_chars; seconds is the call's wall time.
    """
    start = time.perf_counter()
    result = await _call(name, arguments, ctx)
    return msgspec.structs.replace(
        result,
        text=truncate(result.text, ctx.max_output_chars),
        seconds=time.perf_counter() - start,
    )


async def _call(name: str, arguments: str | dict[str, Any], ctx: SkillContext) -> SkillResult:
    try:
        skill = get_skill(name)
    except SkillNotFound as e:
        return SkillResult(text=str(e), ok=False)
    args = decode_args(skill, arguments)
    if isinstance(args, str):
        return SkillResult(text=args, ok=False)
    try:
        return await skill.run(args, ctx)
    except WorkspaceError as e:
        return SkillResult(text=f"{name}: {e}", ok=False)


def decode_args(skill: Skill, arguments: str | dict[str, Any]) -> msgspec.Struct | str:
    """The decoded Args, or a readable error message naming the problem and the fields."""
    try:
        if isinstance(arguments, str):
            # Some parsers hand over "" for a call without arguments.
            return msgspec.json.decode(arguments.strip() or "{}", type=skill.Args, strict=True)
        return msgspec.convert(arguments, type=skill.Args, strict=True)
    except msgspec.ValidationError as e:
        return f"{skill.name}: invalid arguments: {e}. {expected_fields(skill)}"
    except msgspec.DecodeError as e:
        return f"{skill.name}: arguments are not valid JSON ({e}). {expected_fields(skill)}"


def expected_fields(skill: Skill) -> str:
    """One sentence naming a skill's argument fields, their types and defaults."""
    params = tool_schema(skill)["function"]["parameters"]
    required = set(params["required"])
    fields = []
    for field, spec in params["properties"].items():
        kind = spec.get("type", "value")
        if field in required:
            fields.append(f"{field} ({kind}, required)")
        else:
            default = msgspec.json.encode(spec.get("default")).decode()
            fields.append(f"{field} ({kind}, default {default})")
    if not fields:
        return "Expected an empty JSON object {}."
    return "Expected a JSON object with fields: " + ", ".join(fields) + "."


def truncate(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, keeping its head and tail around a marker."""
    if len(text) <= limit:
        return text
    if limit <= 0:
        return ""
    # The marker's length depends on the count it reports; iterate to the fixed point (the
    # count only grows, so this takes a step or two).
    cut = len(text) - limit
    while True:
        marker = _CUT_MARKER.format(cut)
        keep = limit - len(marker)
        if keep < 0:
            return text[:limit]
        if len(text) - keep == cut:
            break
        cut = len(text) - keep
    head = (keep + 1) // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def _inline_refs(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """`node` with every {"$ref": "#/$defs/X"} replaced by X's schema, and $defs dropped."""
    if isinstance(node, list):
        return [_inline_refs(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        ref = node["$ref"].rsplit("/", 1)[-1]
        if ref in seen:
            raise ValueError(f"recursive type {ref} cannot be flattened into a tool schema")
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return {**_inline_refs(defs[ref], defs, (*seen, ref)), **_inline_refs(extra, defs, seen)}
    return {k: _inline_refs(v, defs, seen) for k, v in node.items() if k != "$defs"}
