"""synth (issue 5): catalogue, composition, rendering, filters, decontamination, generation.

The CI check of the issue is ``test_ci_generate_50``: 50 problems generated on the CPU all load
with the problem loader, pass the filters again, and none is a near-duplicate of the bundled set.
One session-scoped run provides them; the resume/determinism test continues from its catalogue.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import torch

from skills.evaluator.problem import (
    PROBLEMS_ROOT,
    iter_problems,
    load_problem,
    load_problem_source,
    read_manifest,
    source_id,
)
from synth.compose import compose
from synth.dedup import THRESHOLD, Index, held_out_sources, shingles, similarity, tokens
from synth.filters import FilterConfig, check_source
from synth.generate import code_fingerprint, generate, probed_catalogue
from synth.ops import catalogue, coverage, stochastic
from synth.probe import probe_catalogue
from synth.render import render
from synth.store import (
    CATALOGUE,
    MANIFEST,
    REJECTED,
    Rejection,
    RunConfig,
    SynthError,
    SynthRow,
    read_log,
)
from synth.workers import Job, WorkerPool
from tests.conftest import once_per_run

ROOT = Path(__file__).resolve().parents[2]
CFG = RunConfig(seed=7, filters=FilterConfig(), held_out="bundled", torch=str(torch.__version__),
                code=code_fingerprint())
SHIPPED = ROOT / "problems" / "synth"


@pytest.fixture(scope="session")
def run50(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One generation run of 50 problems (seed 7, 2 workers), shared by the tests below.

    The shipped set's catalogue probe is reused when it matches this torch and this code
    (``probed_catalogue`` checks both and probes again otherwise); ``test_probe_*`` probe for real.
    Once per test run, whichever xdist worker asks first (the tests read it, none writes to it).
    """

    def make(out: Path) -> bytes:
        if (SHIPPED / CATALOGUE).exists():
            shutil.copy(SHIPPED / CATALOGUE, out / CATALOGUE)
        run = generate(out, 50, CFG, workers=2)
        assert run.accepted == 50
        return b""

    return once_per_run(tmp_path_factory, "synth50", make)[0]


def _files(out: Path) -> list[Path]:
    return sorted(out.glob("level*/*.py"))


def test_ci_generate_50(run50: Path) -> None:
    """Done-when of issue 5: load, pass the filters, no near-duplicate of the bundled set."""
    files = _files(run50)
    assert len(files) == 50
    bundled = Index(held_out_sources(PROBLEMS_ROOT))
    # Every filter as generated, except that the CPU-time bound (a measurement on a shared machine)
    # gets 4x slack: a 45 ms problem must not fail CI because another job ran meanwhile.
    cfg = FilterConfig(max_cpu_ms=4 * FilterConfig().max_cpu_ms)
    for f in files:
        src = f.read_text()
        for sizes in ("default", "small"):
            load_problem(f, sizes=sizes)
        verdict = check_source(src, f.stem, cfg)
        assert verdict.ok, f"{f.name}: {verdict.reason}: {verdict.detail}"
        name, sim = bundled.nearest_held_out(shingles(src))
        assert sim < THRESHOLD, f"{f.name} is {sim:.2f} similar to {name}"


def test_manifest_rows(run50: Path) -> None:
    rows = read_manifest(run50 / MANIFEST)  # the loader's own decoder reads synth's rows
    synth_rows: list[SynthRow] = read_log(run50 / MANIFEST, SynthRow)
    assert len(rows) == len(synth_rows) == 50
    for row, srow in zip(rows, synth_rows, strict=True):
        path = run50 / row.path
        assert row.source == "synth" and row.error is None
        assert row.id == source_id(path.read_text())
        assert row.level == (1 if srow.synth.features.n_ops == 1 else 2)
        assert row.tier is not None and 1 <= row.tier <= 6
        assert row.est_h200_us is not None and row.est_h200_us >= 50  # the repository's sizing convention
        f = srow.synth.features
        assert f.pred_eager_us_h200 >= FilterConfig().min_us and f.n_ops == len(f.ops) >= 1
        assert srow.synth.runtime == "predicted" and srow.synth.nearest_eval_similarity < THRESHOLD


def test_no_magic_numbers_in_models(run50: Path) -> None:
    """Numbers in ``class Model`` are axes or small structural integers; the rest are named constants."""
    allowed = {-1, 0, 1, 2, 3, 4}
    for f in _files(run50):
        tree = ast.parse(f.read_text())
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model")
        nums = {n.value for n in ast.walk(cls) if isinstance(n, ast.Constant) and isinstance(n.value, int | float)
                and not isinstance(n.value, bool)}
        assert nums <= allowed, f"{f.name}: unnamed numbers {sorted(nums - allowed)}"


def _decisions(out: Path) -> dict[int, tuple[str, str]]:
    """Per candidate index: ("ok", its file) or (the rejection's reason, "")."""
    out_ok = {r.synth.index: ("ok", r.path) for r in read_log(out / MANIFEST, SynthRow)}
    return out_ok | {r.index: (str(r.reason), "") for r in read_log(out / REJECTED, Rejection)}


def test_resume_and_same_seed_same_set(run50: Path, tmp_path: Path) -> None:
    """A fresh run stopped at 3 and resumed to 6 (other worker counts) equals the first 6 of run50."""
    out = tmp_path / "again"
    out.mkdir()
    shutil.copy(run50 / CATALOGUE, out / CATALOGUE)  # skip re-probing: same torch, same results
    generate(out, 3, CFG, workers=1)
    with (out / MANIFEST).open("ab") as f:
        f.write(b'{"id": "torn')  # a crash mid-append
    generate(out, 6, CFG, workers=2)
    got = read_log(out / MANIFEST, SynthRow)
    assert len(got) == 6 and len({r.path for r in got}) == 6  # the torn line dropped, nothing twice
    # Every decision that does not rest on a clock is the same candidate by candidate; slow_cpu
    # times one call (documented: a candidate near its bound can flip on a loaded machine, and
    # the rest of the run then shifts by one), so a candidate it decided in either run is set apart.
    decided = {"ref": _decisions(run50), "got": _decisions(out)}
    last = max(r.synth.index for r in got)
    timed = {i for d in decided.values() for i, (what, _) in d.items() if what == "slow_cpu"}
    compared = 0
    for i in range(last + 1):
        if i in timed:
            continue
        assert decided["got"][i] == decided["ref"][i], f"candidate {i}"
        compared += 1
        what, path = decided["got"][i]
        if what == "ok":
            assert (out / path).read_bytes() == (run50 / path).read_bytes()
    # Load may flip more than one (seen: candidates 0 and 1 under two test workers and a second
    # suite on 2 cores); what must hold is that the clock-free decisions were compared at all.
    assert compared >= 3, f"only {compared} clock-free decisions to compare; timed: {sorted(timed)}"
    with pytest.raises(SynthError, match="other settings"):
        generate(out, 7, msgspec.structs.replace(CFG, seed=8), workers=1)


def test_unwritable_output_is_an_error_before_work(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = subprocess.run([sys.executable, "-m", "synth", "generate", "--n", "5", "--out", str(blocker / "sub")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "cannot write to the output folder" in proc.stderr
    assert not (blocker.parent / "sub").exists()


def test_catalogue_is_mined_and_large() -> None:
    ops = catalogue()
    assert len(ops) >= 150
    assert {"nn.Conv2d", "F.gelu", "torch.sum", "nn.LSTM", "torch.special.i0e", "torch.atan2"} <= set(ops)
    for op in ops.values():
        assert op.deterministic and op.category and op.family
    sto = stochastic()
    assert "nn.Dropout" in sto and not any(o.deterministic for o in sto.values()) and not set(sto) & set(ops)
    cov = coverage()
    assert cov["nn.Dropout"] == "stochastic" and cov["nn.Conv2d"] == "catalogued"
    assert cov["nn.Sequential"] == "container or base class"


def test_probe_drops_what_fails() -> None:
    static = catalogue()
    names = ["F.gelu", "torch.isnan", "torch.special.bessel_j0", "nn.Conv2d", "nn.LSTM", "torch.sinh", "torch.argmax"]
    usable, results = probe_catalogue({n: static[n] for n in names})
    assert results["F.gelu"].ok and set(results["F.gelu"].dtypes) == {"float32", "bfloat16", "float16"}
    assert not results["torch.isnan"].ok and "bool" in (results["torch.isnan"].reason or "")
    assert results["torch.sinh"].ok and results["torch.sinh"].domain == "any"  # measured, not noted
    assert results["torch.special.bessel_j0"].ok and results["torch.special.bessel_j0"].dtypes == ["float32"]  # no bf16/fp16 kernels
    assert all(results[n].ok for n in ("nn.Conv2d", "nn.LSTM", "torch.argmax"))  # shape rules confirmed
    assert set(usable) == {n for n in names if results[n].ok}


def test_probed_catalogue_is_large(run50: Path) -> None:
    ops, dtypes, results = probed_catalogue(run50)
    assert len(ops) >= 150 and all(r.ok == (r.name in ops) for r in results)
    assert ops["torch.log"].v["domain"] == "pos" and dtypes["nn.Conv2d"] >= {"float32", "bfloat16"}


def test_compositions_render_and_track_shapes(run50: Path) -> None:
    """The composer's shape rules agree with torch for whole chains, not just single operators."""
    ops, dtypes, _ = probed_catalogue(run50)
    for i in range(20):
        comp = compose(123, i, ops, dtypes)
        if comp is None:
            continue
        lp = load_problem_source(render(comp, ops), f"chain{i}", sizes="small")
        torch.manual_seed(0)
        with torch.no_grad():
            out = lp.make_model()(*lp.get_inputs())
        first = out[0] if isinstance(out, tuple) else out
        assert list(first.shape) == list(comp.nodes[-1].out.shape), f"candidate {i}: {[n.op for n in comp.nodes]}"
    assert compose(123, 5, ops, dtypes) == compose(123, 5, ops, dtypes)


_BAD = {
    "constant": "return torch.zeros_like(x) + 1.0",
    "input_independent": "return self.w * 2.0",
    "tiny": "return x * 1e-9",
    "nondeterministic": "return torch.nn.functional.dropout(x, 0.5, training=True)",
    "nonfinite": "return torch.log(x)",
    "fp64_mismatch": "return (x + 1e5) - 1e5",  # fp32 keeps ~2 decimals of x here
    "compile": "return twice(x) + 1.0",  # a custom op without a fake kernel: torch.compile cannot trace it
}
_PRELUDE = (
    "import torch\nimport torch.nn as nn\n\n"
    "@torch.library.custom_op('synthtest::twice', mutates_args=())\n"
    "def twice(x: torch.Tensor) -> torch.Tensor:\n    return x * 2\n\n"
)


@pytest.mark.parametrize("reason", sorted(_BAD))
def test_filters_reject(reason: str) -> None:
    src = (
        (_PRELUDE if reason == "compile" else "import torch\nimport torch.nn as nn\n")
        + "\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.w = nn.Parameter(torch.randn(64))\n\n"
        f"    def forward(self, x):\n        {_BAD[reason]}\n\n"
        "def get_inputs():\n    return [torch.randn(32, 64)]\n\ndef get_init_inputs():\n    return []\n"
    )
    verdict = check_source(src, reason, FilterConfig())
    assert not verdict.ok and verdict.reason == reason, verdict


def test_hanging_candidate_is_killed_and_replaced() -> None:
    hang = ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
            "        while True:\n            pass\n\ndef get_inputs():\n    return [torch.randn(4)]\n\n"
            "def get_init_inputs():\n    return []\n")
    good = (PROBLEMS_ROOT / "level1" / "01_relu.py").read_text()
    verdicts = {}
    with WorkerPool(1, {}, FilterConfig(compile="none"), timeout_s=3.0) as pool:
        pool.submit(Job(index=0, kind="source", source=hang, name="hang"))
        while 0 not in verdicts:
            verdicts.update({v.index: v for v in pool.poll(0.2)})
        pool.submit(Job(index=1, kind="source", source=good, name="relu"))
        while 1 not in verdicts:
            verdicts.update({v.index: v for v in pool.poll(0.2)})
        assert pool.replaced == 1
    assert verdicts[0].reason == "timeout" and "3 s" in (verdicts[0].detail or "")
    assert verdicts[1].ok, verdicts[1]


def test_dedup_normalises_names_and_constants() -> None:
    relu = (PROBLEMS_ROOT / "level1" / "01_relu.py").read_text()
    renamed = (relu.replace("x", "inp").replace("8192", "1000")
             .replace("Element-wise ReLU.", "Rectified linear unit, applied to every element."))
    assert renamed != relu
    assert similarity(shingles(relu), shingles(renamed)) >= THRESHOLD
    assert "N:torch" in tokens(relu) and "C" not in tokens("def f():\n    '''doc'''\n")
    tanh = (PROBLEMS_ROOT / "level1" / "08_tanh.py").read_text()
    assert similarity(shingles(relu), shingles(tanh)) < THRESHOLD  # another operator is another problem
    index = Index(held_out_sources(PROBLEMS_ROOT))
    assert index.nearest_held_out(shingles(renamed))[0] == "level1/01_relu"
    index.add("a", shingles(relu))
    name, sim = index.nearest_in_set(shingles(renamed))
    assert name == "a" and sim == pytest.approx(similarity(shingles(relu), shingles(renamed)))
    assert len(index.held_out) == len(iter_problems(PROBLEMS_ROOT))


def test_cli_show_and_ops(run50: Path) -> None:
    row = read_log(run50 / MANIFEST, SynthRow)[3]
    show = subprocess.run([sys.executable, "-m", "synth", "show", "--run", str(run50), "--index", str(row.synth.index),
                           "--sized"],
                          cwd=ROOT, capture_output=True, text=True, timeout=200)
    assert show.returncode == 0, show.stderr
    assert show.stdout.strip() == (run50 / row.path).read_text().split('"""', 2)[2].strip()  # same file, no title
    ops = subprocess.run([sys.executable, "-m", "synth", "ops"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert ops.returncode == 0 and "nn.Conv2d" in ops.stdout and "stochastic operators" in ops.stdout
