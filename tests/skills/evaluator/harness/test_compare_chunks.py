"""The judge's references in little memory (skills/evaluator/harness/compare.py): r64 kept as r's fp32
difference, budgets and comparisons per chunk, with the same verdicts as the whole-tensor form."""

from __future__ import annotations

import math

import pytest
import torch

from skills.evaluator.harness import compare
from skills.evaluator.harness.compare import Budget, Reference, compare_output


def _pair(n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """An fp32 reduction's output and its fp64 value (a row sum: r differs from r64 by rounding)."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 64, generator=g)
    return x.sum(1), x.double().sum(1)


def test_fp32_reference_holds_8_bytes_an_element_and_reconstructs_r64() -> None:
    r, r64 = _pair(10_000)
    ref = Reference(r, r64)
    assert ref._r64 is None and ref._d is not None and ref._d.dtype == torch.float32
    held = ref.r.element_size() + ref._d.element_size()
    assert held == 8, held
    back = ref.r64
    assert back.dtype == torch.float64
    rel = float(((back - r64).abs() / r64.abs().clamp(min=1e-30)).max())
    assert rel < 2.0**-40, rel  # d keeps 24 bits of the rounding error
    assert float((r.double() - r64).abs().max()) > 0  # the case is not trivial: r differs from r64


def test_non_finite_or_fp64_outputs_keep_r64_whole() -> None:
    r, r64 = _pair(100)
    r64[3] = math.inf
    r[3] = math.inf
    assert Reference(r, r64)._r64 is not None
    assert Reference(r64.clone(), r64)._r64 is not None  # an fp64 output: nothing to save


@pytest.mark.parametrize("chunk", [1 << 24, 1000, 7])
def test_verdicts_do_not_depend_on_the_chunk(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    """The same outputs give the same verdict, counts, errors and worst index whatever the chunk;
    an error in the last chunk is found and named."""
    monkeypatch.setattr(compare, "CHUNK", chunk)
    r, r64 = _pair(10_000, seed=1)
    ref = Reference(r, r64, Budget(mode="fair", reduction_length=64))
    fair = (r64 + (r64 - r.double()) * 3).float()  # 3x the reference's own error: within budget
    ok = compare_output(0, fair, ref)
    assert ok.ok, ok.message
    # the room left is stated: 3x torch's own error uses a fraction of a budget of 32x (elements)
    assert ok.budget_used is not None and 0.0 < ok.budget_used < 1.0, ok.budget_used
    assert "of its budget" in ok.message, ok.message
    exact = compare_output(0, r, ref)
    assert exact.ok and exact.budget_used is not None and exact.budget_used < ok.budget_used
    bad = r.clone()
    bad[9_990] += 1.0  # far outside any budget, in the last chunk
    worse = compare_output(0, bad, ref)
    assert not worse.ok and worse.bad_elements == 1
    assert worse.budget_used is not None and worse.budget_used > 1.0
    assert "[9990]" in worse.message, worse.message
    assert worse.max_abs_err == pytest.approx(1.0, rel=1e-3)
    half = r.half().float()  # a downcast: most elements far over
    assert not compare_output(0, half, ref).ok


def test_whole_budget_matches_the_chunked_one(monkeypatch: pytest.MonkeyPatch) -> None:
    r, r64 = _pair(5_000, seed=2)
    whole = Reference(r, r64).budget
    monkeypatch.setattr(compare, "CHUNK", 333)
    chunked = Reference(r, r64).budget
    assert torch.equal(whole, chunked)
