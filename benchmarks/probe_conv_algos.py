"""How much a convolution problem's time depends on cuDNN's algorithm choice: each problem's Model
timed in fp32 (TF32 off, the judge's policy) with cuDNN's heuristic pick (torch's default,
`cudnn.benchmark = False`, what eager and torch.compile baselines use) and with cuDNN's measured
pick (`cudnn.benchmark = True`, what `cudnnFindConvolutionForwardAlgorithm` gives a kernel that
caches its choice in static state), each conv layer alone too, and torch.compile.

    python3 benchmarks/probe_conv_algos.py [PROBLEM ...] [--compile] [--out conv-algos-h200]

A problem whose Model runs much faster with the measured pick is one where a cuDNN solution can beat
both baselines by choosing its algorithm, before any fusion (problems/solutions/README.md).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("NVIDIA_TF32_OVERRIDE", "0")  # as in the candidate's environment
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.common import cuda_median_us, environment, table, write_result  # noqa: E402

DEFAULT = ["level1/35_conv2d_3x3", "level1/36_conv2d_stem_7x7", "level2/07_conv_batchnorm_relu",
           "level2/11_conv_maxpool_sigmoid", "level2/15_conv_gelu_global_avgpool",
           "level2/17_conv_groupnorm_silu", "level2/21_conv_relu_bias_add",
           "level3/06_resnet_basic_block", "level3/07_small_cnn", "level3/08_tiny_vgg",
           "level3/09_depthwise_separable_block"]


def _probe(name: str, with_compile: bool) -> dict[str, Any]:
    import torch

    from skills.evaluator.harness.judge import set_precision
    from skills.evaluator.problem import load_problem

    set_precision("fp32")
    loaded = load_problem(ROOT / "problems" / f"{name}.py")
    torch.manual_seed(0)
    model = loaded.make_model().cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in loaded.get_inputs()]
    convs: list[tuple[str, torch.nn.Module, torch.Tensor]] = []
    hooks = [m.register_forward_hook(lambda mod, args, out, n=n: convs.append((n, mod, args[0].detach())))
             for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d | torch.nn.ConvTranspose2d)]
    with torch.no_grad():
        model(*inputs)
    for h in hooks:
        h.remove()
    row: dict[str, Any] = {"problem": name, "layers": []}
    with torch.no_grad():
        for bench in (False, True):
            torch.backends.cudnn.benchmark = bench
            row[f"eager_{'measured' if bench else 'heuristic'}_us"] = cuda_median_us(lambda: model(*inputs), calls=30)
            for i, (n, mod, x) in enumerate(convs):
                t = cuda_median_us(lambda mod=mod, x=x: mod(x), calls=30)
                if bench:
                    row["layers"][i]["measured_us"] = t
                else:
                    row["layers"].append({"layer": n, "input": list(x.shape), "heuristic_us": t,
                                          "weight": list(mod.weight.shape), "groups": mod.groups})
        torch.backends.cudnn.benchmark = False
        if with_compile:
            t0 = time.perf_counter()
            compiled = torch.compile(model)
            row["compile_us"] = cuda_median_us(lambda: compiled(*inputs), calls=30)
            row["compile_s"] = time.perf_counter() - t0
            torch._dynamo.reset()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("problems", nargs="*", default=DEFAULT)
    ap.add_argument("--compile", action="store_true", help="time torch.compile too (tens of seconds a problem)")
    ap.add_argument("--out", default="conv-algos-h200")
    args = ap.parse_args(argv)
    import torch

    if not torch.cuda.is_available():
        print("no GPU here", file=sys.stderr)
        return 2
    rows, out = [], []
    for name in args.problems:
        try:
            r = _probe(name, args.compile)
        except Exception as exc:  # one problem's failure is a row, not the end of the table
            r = {"problem": name, "error": f"{type(exc).__name__}: {exc}"}
        out.append(r)
        if "error" in r:
            rows.append([name, None, None, None, None, r["error"][:60]])
            continue
        h, m = r["eager_heuristic_us"], r["eager_measured_us"]
        convs = "; ".join(f"{x['layer']} {x['heuristic_us']:.0f}->{x['measured_us']:.0f}" for x in r["layers"])
        rows.append([name, h, m, h / m, r.get("compile_us"), convs])
        print(f"{name}: heuristic {h:.0f} us, measured {m:.0f} us, compile {r.get('compile_us')}", flush=True)
    print(table(["problem", "eager heuristic us", "eager measured us", "ratio", "compile us", "convs heuristic->measured us"], rows))
    path = write_result(args.out, {**environment(), "rows": out})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
