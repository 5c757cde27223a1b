"""skills/evaluator/problem.py and the bundled problems: loading, CPU runs, meta runs, the manifest."""

from __future__ import annotations

import hashlib
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
import torch

from skills.evaluator.problem import (
    MANIFEST_NAME,
    PRECISIONS,
    PROBLEMS_ROOT,
    LoadedProblem,
    ProblemError,
    build_manifest,
    encode_manifest,
    estimate_h200_us,
    iter_problems,
    load_problem,
    load_problem_source,
    main,
    manifest_row,
    precision_of,
    read_manifest,
)

FILES = iter_problems(PROBLEMS_ROOT)
FILE_IDS = [f"{p.parent.name}/{p.stem}" for p in FILES]
MIN_PER_LEVEL = {1: 30, 2: 20, 3: 10}
FORWARD_LIMIT_S = 2.0
MIN_MEAN_ABS = 1e-3
MIN_EST_US = 50.0
REGENERATE = "regenerate with: python -m skills.evaluator.problem manifest"


def _sha16(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def _tensors(out: Any) -> list[torch.Tensor]:
    if isinstance(out, torch.Tensor):
        return [out]
    assert isinstance(out, tuple | list), f"output must be a tensor or tuple; got {type(out)}"
    flat: list[torch.Tensor] = []
    for item in out:
        flat.extend(_tensors(item))
    return flat


def _inputs(lp: LoadedProblem, seed: int) -> list[Any]:
    torch.manual_seed(seed)
    return lp.get_inputs()


def _write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# -- bundled problems ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_bundled_problem_loads(path: Path) -> None:
    default = load_problem(path)
    small = load_problem(path, sizes="small")
    for lp in (default, small):
        assert issubclass(lp.Model, torch.nn.Module)
        assert lp.problem.id == _sha16(path)
        assert lp.problem.name == f"{path.parent.name}/{path.stem}"
        assert lp.problem.level == int(path.parent.name.removeprefix("level"))
        assert lp.problem.precision in PRECISIONS
        assert lp.problem.source == path.read_text(encoding="utf-8")
        assert (lp.Model.__doc__ or "").strip(), "Model needs a one-line docstring"
    assert small.sizes == "small"
    module = small.module
    sizes = getattr(module, "SMALL_SIZES", None)
    assert isinstance(sizes, dict) and sizes, "bundled problems must define SMALL_SIZES"
    read = set(module.get_inputs.__code__.co_names) | set(module.get_init_inputs.__code__.co_names)
    for key, value in sizes.items():
        assert key in read, f"SMALL_SIZES key {key!r} is not read by get_inputs/get_init_inputs"
        assert getattr(module, key) == value
    changed = [k for k, v in sizes.items() if getattr(default.module, k) != v]
    assert changed, "SMALL_SIZES changes nothing"
    # the two loads are separate modules
    assert default.module is not small.module


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_bundled_problem_runs_small_on_cpu(path: Path) -> None:
    lp = load_problem(path, sizes="small")
    torch.manual_seed(0)
    model = lp.make_model()
    x1 = _inputs(lp, 1)
    x2 = _inputs(lp, 2)
    with torch.no_grad():
        start = time.perf_counter()
        out_a = _tensors(model(*x1))
        elapsed = time.perf_counter() - start
        out_b = _tensors(model(*x1))
        out_c = _tensors(model(*x2))
    assert elapsed < FORWARD_LIMIT_S, f"one small forward took {elapsed:.2f} s"
    assert out_a, "forward returned no tensors"
    assert all(torch.equal(a, b) for a, b in zip(out_a, out_b, strict=True)), "not deterministic"
    assert any(not torch.equal(a, c) for a, c in zip(out_a, out_c, strict=True)), (
        "output does not depend on the inputs"
    )
    flat = torch.cat([t.detach().abs().double().flatten() for t in out_a])
    assert torch.isfinite(flat).all(), "non-finite output"
    mean_abs = flat.mean().item()
    assert mean_abs > MIN_MEAN_ABS, f"output is tiny: mean |out| = {mean_abs:.3g}"


@pytest.mark.parametrize("path", FILES, ids=FILE_IDS)
def test_bundled_problem_runs_on_meta(path: Path) -> None:
    row = manifest_row(path, PROBLEMS_ROOT)
    assert row.error is None, row.error
    assert row.outputs and row.inputs and row.ops
    assert row.est_h200_us is not None
    assert row.est_h200_us >= MIN_EST_US or _measured_us(row.name) >= MIN_EST_US


def _measured_us(name: str) -> float:
    """Eager time measured on an H200 (bench_problems.py), recorded in the committed manifest."""
    rows = {r.name: r for r in read_manifest(PROBLEMS_ROOT / MANIFEST_NAME)}
    row = rows.get(name)
    return (row.baselines or {}).get("eager_us_h200", 0.0) if row else 0.0


def test_level_counts() -> None:
    counts = {level: 0 for level in MIN_PER_LEVEL}
    for path in FILES:
        level = int(path.parent.name.removeprefix("level"))
        counts[level] = counts.get(level, 0) + 1
    for level, least in MIN_PER_LEVEL.items():
        assert counts[level] >= least, f"level{level}: {counts[level]} problems, need {least}"


def test_manifest_matches_files() -> None:
    rows = read_manifest(PROBLEMS_ROOT / MANIFEST_NAME)
    names = [r.name for r in rows]
    assert names == sorted(names), "manifest must be sorted by name"
    by_name = {r.name: r for r in rows}
    assert set(by_name) == set(FILE_IDS), f"manifest rows differ from the files; {REGENERATE}"
    for path, name in zip(FILES, FILE_IDS, strict=True):
        row = by_name[name]
        assert row.id == _sha16(path), f"{name}: manifest id is stale; {REGENERATE}"
        assert row.path == path.relative_to(PROBLEMS_ROOT).as_posix()
        assert row.source == "kagent"
        assert row.error is None, f"{name}: {row.error}"
        measured = (row.baselines or {}).get("eager_us_h200", 0.0)
        assert row.est_h200_us is not None and max(row.est_h200_us, measured) >= MIN_EST_US, (
            f"{name}: est_h200_us {row.est_h200_us} and measured {measured} < {MIN_EST_US};"
            " raise the default sizes"
        )
        assert row.precision in PRECISIONS
        assert row.flops is not None and row.bytes is not None and row.bytes > 0


# -- manifest builder ---------------------------------------------------------------------------

MATMUL = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"A @ B.\"\"\"

    def forward(self, A, B):
        return torch.matmul(A, B)


M = 64
K = 32
N = 16
SMALL_SIZES = {"M": 8}


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
"""

LINEAR_GELU_BF16 = """\
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    \"\"\"Linear then GELU in bf16.\"\"\"

    def __init__(self, n):
        super().__init__()
        self.fc = nn.Linear(n, n, dtype=torch.bfloat16)

    def forward(self, x, scale):
        return F.gelu(self.fc(x)) * scale


n = 128


def get_inputs():
    return [torch.randn(256, n, dtype=torch.bfloat16), 2.0]


def get_init_inputs():
    return [n]
"""


def test_manifest_row_counts_flops_bytes_and_ops(tmp_path: Path) -> None:
    path = _write(tmp_path, "level1/01_mm.py", MATMUL)
    row = manifest_row(path, tmp_path)
    assert row.error is None
    assert (row.name, row.level, row.path, row.source) == (
        "level1/01_mm",
        1,
        "level1/01_mm.py",
        "kagent",
    )
    assert row.id == _sha16(path)
    assert row.ops == ["mm"]
    assert row.flops == 2 * 64 * 32 * 16
    assert row.bytes == (64 * 32 + 32 * 16 + 64 * 16) * 4
    assert row.kernels == 1
    assert [(s.shape, s.dtype) for s in row.inputs] == [
        ([64, 32], "float32"),
        ([32, 16], "float32"),
    ]
    assert [(s.shape, s.dtype) for s in row.outputs] == [([64, 16], "float32")]
    assert row.precision == "fp32"
    assert row.est_h200_us == estimate_h200_us(row.flops, row.bytes, 1, "fp32")
    assert row.baselines is None


def test_manifest_row_non_tensor_inputs_params_and_bf16(tmp_path: Path) -> None:
    path = _write(tmp_path, "level2/01_lin.py", LINEAR_GELU_BF16)
    row = manifest_row(path, tmp_path, source="other")
    assert row.error is None and row.source == "other"
    assert row.precision == "bf16"
    assert row.ops == ["addmm", "gelu", "mul"]
    assert row.inputs[1].value == 2.0 and row.inputs[1].type == "float"
    assert row.inputs[1].shape is None
    params = (128 * 128 + 128) * 2
    assert row.bytes == 256 * 128 * 2 * 2 + params
    encoded = msgspec.json.decode(msgspec.json.encode(row.inputs))
    assert encoded == [{"shape": [256, 128], "dtype": "bfloat16"}, {"value": 2.0, "type": "float"}]


def test_manifest_records_errors_and_is_deterministic(tmp_path: Path) -> None:
    _write(tmp_path, "level1/02_mm.py", MATMUL)
    _write(tmp_path, "level1/01_broken.py", "def oops(:\n")
    not_meta = MATMUL.replace("return torch.matmul(A, B)", "return torch.matmul(A, B).numpy()")
    _write(tmp_path, "level2/01_numpy.py", not_meta)
    rows = build_manifest(tmp_path)
    assert [r.name for r in rows] == ["level1/01_broken", "level1/02_mm", "level2/01_numpy"]
    broken, ok, numpy = rows
    assert broken.error is not None and "syntax error at line 1" in broken.error
    assert broken.id == _sha16(tmp_path / "level1/01_broken.py") and broken.flops is None
    assert ok.error is None
    assert numpy.error is not None and "meta" in numpy.error and numpy.precision == "fp32"
    assert encode_manifest(rows) == encode_manifest(build_manifest(tmp_path))


def test_manifest_command(tmp_path: Path) -> None:
    _write(tmp_path, "level1/01_mm.py", MATMUL)
    out = tmp_path / "m.jsonl"
    assert main(["manifest", "--root", str(tmp_path), "--out", str(out), "--source", "x"]) == 0
    rows = read_manifest(out)
    assert [(r.name, r.source) for r in rows] == [("level1/01_mm", "x")]
    assert main(["manifest", "--root", str(tmp_path)]) == 0
    assert (tmp_path / MANIFEST_NAME).read_bytes() == out.read_bytes().replace(b'"x"', b'"kagent"')


# -- KernelBench compatibility ------------------------------------------------------------------

KB_TEMPLATE = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"Scaled add.\"\"\"

    def __init__(self, *args):
        super().__init__()
        self.args = args

    def forward(self, x):
        return x * 2.0 + 1.0


batch_size = 16
dim = 8


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return INIT
"""


@pytest.mark.parametrize(
    ("init", "expected"),
    [("[]", ()), ("[3, 4]", (3, 4)), ("[[1, 2]]", ([1, 2],)), ("(5,)", (5,))],
)
def test_kernelbench_init_inputs(tmp_path: Path, init: str, expected: tuple[Any, ...]) -> None:
    path = _write(tmp_path, "kb.py", KB_TEMPLATE.replace("INIT", init))
    for sizes in ("default", "small"):
        lp = load_problem(path, sizes="small" if sizes == "small" else "default")
        assert lp.problem.name == "kb" and lp.problem.level is None
        assert lp.problem.precision == "fp32"
        assert isinstance(lp.get_init_inputs(), list)
        model = lp.make_model()
        assert model.args == expected
        (x,) = lp.get_inputs()
        assert x.shape == (16, 8)  # no SMALL_SIZES: small means default
        assert torch.equal(model(x), x * 2.0 + 1.0)


KB_TENSOR_INT = """\
import torch
import torch.nn as nn


class Model(nn.Module):
    \"\"\"Sum over a dimension given at call time.\"\"\"

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, dim: int) -> torch.Tensor:
        return torch.sum(x, dim=dim)


batch_size = 16
dim1 = 256
dim2 = 256
reduce_dim = 1


def get_inputs():
    x = torch.randn(batch_size, dim1, dim2)
    return [x, reduce_dim]


def get_init_inputs():
    return []
"""


def test_kernelbench_tensor_and_int_inputs(tmp_path: Path) -> None:
    lp = load_problem(_write(tmp_path, "level1/47_Sum_reduction.py", KB_TENSOR_INT))
    assert lp.problem.name == "level1/47_Sum_reduction" and lp.problem.level == 1
    x, dim = lp.get_inputs()
    assert isinstance(dim, int)
    assert lp.make_model()(x, dim).shape == (16, 256)
    row = manifest_row(tmp_path / "level1/47_Sum_reduction.py", tmp_path)
    assert row.error is None
    assert row.inputs[1].value == 1 and row.inputs[1].type == "int"


def test_small_sizes_are_applied_per_load(tmp_path: Path) -> None:
    path = _write(tmp_path, "mm.py", MATMUL)
    small = load_problem(str(path), sizes="small")
    default = load_problem(path)
    assert small.problem.path == str(path)
    assert small.get_inputs()[0].shape == (8, 32)
    assert default.get_inputs()[0].shape == (64, 32)  # the small load did not leak


def test_load_problem_source_and_isolation() -> None:
    before = {name for name in sys.modules if name.startswith("_kagent_problem_")}
    a = load_problem_source(MATMUL, "level1/x")
    b = load_problem_source(KB_TEMPLATE.replace("INIT", "[]"), "level1/x")
    assert a.problem.level == 1 and a.problem.path == "<level1/x>"
    assert a.problem.id == hashlib.sha256(MATMUL.encode()).hexdigest()[:16]
    assert a.Model is not b.Model and a.module is not b.module
    assert a.Model.__name__ == b.Model.__name__ == "Model"
    assert a.Model.__doc__ == "A @ B." and b.Model.__doc__ == "Scaled add."
    assert load_problem_source(MATMUL, "plain").problem.level is None
    after = {name for name in sys.modules if name.startswith("_kagent_problem_")}
    assert after == before, "loading must not leave modules in sys.modules"


def test_precision() -> None:
    bf16 = MATMUL.replace("torch.randn(M, K)", "torch.randn(M, K, dtype=torch.bfloat16)")
    fp16 = MATMUL.replace("torch.randn(K, N)", "torch.randn(K, N, dtype=torch.float16)")
    tf32 = MATMUL + 'PRECISION = "tf32"\n'
    assert load_problem_source(MATMUL, "a").problem.precision == "fp32"
    assert load_problem_source(bf16, "b").problem.precision == "bf16"
    assert load_problem_source(fp16, "c").problem.precision == "fp16"
    lp = load_problem_source(tf32, "d")
    assert lp.problem.precision == "tf32" and precision_of(lp.module) == "tf32"
    bad = MATMUL + 'PRECISION = "int8"\n'
    with pytest.raises(ProblemError, match=r"<e>: PRECISION must be one of"):
        load_problem_source(bad, "e")


def test_iter_problems_skips_non_problems(tmp_path: Path) -> None:
    for name in (
        "level2/02_b.py",
        "level2/01_a.py",
        "level10/01_z.py",
        "level2/__init__.py",
        "level2/_helper.py",
        "level2/README.md",
        "level2/readme.py",
        "other/01_x.py",
    ):
        _write(tmp_path, name, MATMUL)
    got = [p.relative_to(tmp_path).as_posix() for p in iter_problems(tmp_path)]
    assert got == ["level2/01_a.py", "level2/02_b.py", "level10/01_z.py"]


# -- errors ---------------------------------------------------------------------------------------

ERROR_CASES: list[tuple[str, str | bytes, str]] = [
    (
        "syntax",
        MATMUL.replace("def forward(self, A, B):", "def forward(self, A, B)"),
        r"syntax error at line 8",
    ),
    (
        "import",
        "import no_such_module_kagent\n" + MATMUL,
        r"import failed: .*no_such_module_kagent",
    ),
    (
        "raises",
        MATMUL + "raise RuntimeError('boom')\n",
        r"executing the file raised RuntimeError: boom",
    ),
    ("no_model", MATMUL.replace("class Model(", "class Other("), r"no `Model` class"),
    ("not_module", MATMUL + "Model = object\n", r"`Model` is not a subclass of torch.nn.Module"),
    ("model_instance", MATMUL + "Model = torch.nn.ReLU()\n", r"`Model` is not a subclass"),
    (
        "no_get_inputs",
        MATMUL.replace("def get_inputs", "def get_inputz"),
        r"no `get_inputs` function",
    ),
    (
        "no_get_init_inputs",
        MATMUL.replace("def get_init_inputs", "def get_init"),
        r"no `get_init_inputs` function",
    ),
    ("get_inputs_not_callable", MATMUL + "get_inputs = [1]\n", r"`get_inputs` is not callable"),
    (
        "get_init_inputs_not_callable",
        MATMUL + "get_init_inputs = 3\n",
        r"`get_init_inputs` is not callable",
    ),
    (
        "get_inputs_dict",
        MATMUL.replace(
            "return [torch.randn(M, K), torch.randn(K, N)]", "return {'a': torch.randn(M, K)}"
        ),
        r"get_inputs\(\) must return a list or tuple; got dict",
    ),
    (
        "get_init_inputs_int",
        MATMUL.replace("    return []\n", "    return 3\n"),
        r"get_init_inputs\(\) must return a list or tuple; got int",
    ),
    (
        "small_sizes_unknown",
        MATMUL.replace('{"M": 8}', '{"Q": 8}'),
        r"SMALL_SIZES names 'Q', which is not a module global",
    ),
    ("not_utf8", b"# \xff\xfe caf\xe9\n" + MATMUL.encode(), r"not valid UTF-8"),
]


@pytest.mark.parametrize(("case", "text", "reason"), ERROR_CASES, ids=[c[0] for c in ERROR_CASES])
def test_load_errors_name_file_and_reason(
    tmp_path: Path, case: str, text: str | bytes, reason: str
) -> None:
    path = _write(tmp_path, f"{case}.py", text)
    with pytest.raises(ProblemError, match=reason) as info:
        load_problem(path, sizes="small")
    assert str(info.value).startswith(f"{path}: ")


def test_source_errors_name_the_problem() -> None:
    with pytest.raises(ProblemError, match=r"^<level1/bad>: syntax error at line 1"):
        load_problem_source("x = (\n", "level1/bad")


def test_missing_file_and_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nope.py"
    with pytest.raises(ProblemError, match=r"nope\.py: file not found"):
        load_problem(missing)
    with pytest.raises(ProblemError, match=r"is a directory"):
        load_problem(tmp_path)


def test_return_type_checked_on_call_when_not_meta_safe(tmp_path: Path) -> None:
    # get_inputs uses .tolist(), which fails on meta; the load-time check is skipped and the
    # return type is checked when the harness calls it.
    text = MATMUL.replace(
        "return [torch.randn(M, K), torch.randn(K, N)]",
        "return {'n': torch.randn(2).tolist()}",
    )
    lp = load_problem(_write(tmp_path, "late.py", text))
    with pytest.raises(ProblemError, match=r"late\.py: get_inputs\(\) must return a list"):
        lp.get_inputs()
