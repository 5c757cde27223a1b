"""Launch accounting (rows 15-16 of EXPLOITS.md) and the ncu report parser, on recorded data.

The profiler itself needs a GPU (tests/skills/evaluator/test_gpu_eval.py); these pin the attribution logic with
event spans shaped like Kineto's: host call windows, kernels starting inside them.
"""

from __future__ import annotations

from skills.evaluator.harness.launches import Span, account, base_name
from skills.evaluator.ncu import parse_raw_csv

BUILT = ["(anonymous namespace)::swish_kernel(float const*, float*, long, long)"]


def _windows(n: int) -> list[Span]:
    return [Span(f"kagent_call_{i}", 100.0 * i, 100.0 * i + 50.0) for i in range(n)]


def test_names_match_across_ptxas_profiler_and_ncu() -> None:
    assert base_name(BUILT[0]) == "swish_kernel"
    assert base_name("void (anonymous namespace)::swish_kernel<4>(float const*, float*, long, long)") == "swish_kernel"
    assert base_name("<unnamed>::swish_kernel(const float *, float *, long, long)") == "swish_kernel"


def test_fair_calls_are_not_flagged_and_kernel_time_is_per_call() -> None:
    kernels = [Span("swish_kernel(float const*, float*, long, long)", 100.0 * i + 10, 100.0 * i + 40) for i in range(5)]
    kernels.append(Span("Memset (Device)", 5.0, 6.0))
    kernel_us, flags = account(_windows(5), kernels, BUILT, "c_abi")
    assert flags == []
    assert kernel_us == (5 * 30.0 + 1.0) / 5  # the memset counts as device time, not as compute


def test_decoy_kernel_that_runs_in_some_calls_only_is_flagged() -> None:
    kernels = [Span("swish_kernel(float const*, float*, long, long)", 10.0, 40.0)]
    _, flags = account(_windows(5), kernels, BUILT, "c_abi")
    assert [f.name for f in flags] == ["decoy_kernel"]
    assert "4 of 5" in flags[0].detail


def test_library_kernel_inside_a_call_is_a_torch_fallback() -> None:
    kernels = [Span("swish_kernel(float const*, float*, long, long)", 100.0 * i + 10, 100.0 * i + 20) for i in range(3)]
    kernels.append(Span("void at::native::vectorized_elementwise_kernel<4, at::native::sigmoid_kernel_cuda>(int)", 30.0, 45.0))
    _, flags = account(_windows(3), kernels, BUILT, "c_abi")
    assert [f.name for f in flags] == ["torch_fallback"]
    assert "sigmoid" in flags[0].detail


def test_inline_flavour_counts_any_non_library_kernel_as_custom() -> None:
    kernels = [Span("my_kernel(float*)", 100.0 * i + 10, 100.0 * i + 20) for i in range(2)]
    _, flags = account(_windows(2), kernels, [], "torch")
    assert flags == []
    _, flags = account(_windows(2), [Span("ampere_sgemm_128x64_nn", 10.0, 20.0)], [], "torch")
    assert {f.name for f in flags} == {"decoy_kernel", "torch_fallback"}


def test_ncu_raw_csv_is_parsed_with_units() -> None:
    header = ['"ID"', '"Kernel Name"', '"gpu__time_duration.sum"', '"sm__warps_active.avg.pct_of_peak_sustained_active"',
              '"launch__registers_per_thread"', '"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio"',
              '"smsp__average_warps_issue_stalled_wait_per_issue_active.ratio"']
    units = ['""', '""', '"nsecond"', '"%"', '"register/thread"', '"ratio"', '"ratio"']
    row = ['"0"', '"<unnamed>::swish_kernel(const float *, float *, long, long)"', '"133,376"', '"80.1"', '"32"', '"11.1"', '"3.2"']
    text = "==PROF== noise\n" + "\n".join(",".join(r) for r in (header, units, row)) + "\n"
    [k] = parse_raw_csv(text)
    assert abs((k.duration_us or 0) - 133.376) < 1e-9
    assert k.occupancy_pct == 80.1 and k.registers == 32
    assert k.top_stalls[0] == ("long_scoreboard", 11.1)
