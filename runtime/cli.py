"""`kagent`: the command line.

    kagent eval PROBLEM.py SOLUTION [--backend cuda|cpu] [--mode final|profile|test] [--json]
    kagent problems list [--root problems] [--level N]
    kagent build WORKSPACE [--backend cuda|cpu]  static checks + compile, no GPU needed
    kagent solve FILE [--out DIR]             through the running kagentd (streams progress)
    kagent episodes list|show ID|export       the store (runtime/cli_runtime.py)
    kagent replay EPISODE [--skip-timing]     re-run a logged episode's tool calls and compare
    kagent bench PROBLEMS... --solutions DIR|--reference|--policy-url URL --out DIR   the results table

SOLUTION is a workspace directory (model_new.py + kernels/) or a single KernelBench-style
model_new.py that builds its own kernels with load_inline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Literal, cast

import anyio
import msgspec

if TYPE_CHECKING:  # the evaluator is imported by `kagent eval` alone: `--help` and the rest start fast
    from skills.evaluator.config import EvalConfig
    from skills.evaluator.results import EvalResult, Mode

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _out(text: str) -> None:
    sys.stdout.write(text + "\n")


def _err(text: str) -> None:
    sys.stderr.write(f"kagent: {text}\n")


def _eval_args(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("eval", help="grade a kernel solution without any LLM")
    p.add_argument("problem", type=Path, help="problem file in KernelBench format")
    p.add_argument("solution", type=Path, help="workspace dir (model_new.py + kernels/) or a single model_new.py")
    p.add_argument("--backend", choices=["cuda", "cpu"], default=None,
                   help="where kernels build and run (default: cuda where torch sees a GPU, else cpu)")
    p.add_argument("--mode", choices=["final", "profile", "test"], default="final",
                   help="test: correctness only; profile: + timing; final: + reward (default)")
    p.add_argument("--sizes", choices=["default", "small"], default=None,
                   help="problem sizes (default: small on cpu, default on cuda)")
    p.add_argument("--baselines", default="eager,compile", help="comma list of eager,compile (default both)")
    p.add_argument("--reward", default="milestone", help="reward function (milestone, speedup_vs_compile, ...)")
    p.add_argument("--target-seconds", type=float, default=0.4, help="time spent in timed calls per callable")
    p.add_argument("--gpu", default=None, help="CUDA_VISIBLE_DEVICES for the workers")
    p.add_argument("--json", action="store_true", help="print the EvalResult as JSON")
    p.add_argument("--unsafe-no-sandbox", action="store_true",
                   help="run candidate code without bubblewrap (only for code you trust)")


def _problems_args(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("problems", help="the bundled problem set")
    p.add_argument("action", choices=["list"])
    p.add_argument("--root", type=Path, default=PROJECT_ROOT / "problems")
    p.add_argument("--level", type=int, default=None)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="kagent", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    _eval_args(sub)
    _problems_args(sub)
    from runtime.build_command import add_build_parser

    add_build_parser(sub)
    from runtime.cli_runtime import add_parsers

    add_parsers(sub)
    from runtime.bench_args import add_parser as add_bench_parser

    add_bench_parser(sub)
    return ap


def run_eval(args: argparse.Namespace) -> int:
    if not args.problem.is_file():
        _err(f"problem file {args.problem} does not exist")
        return 2
    if not args.solution.exists():
        _err(f"solution {args.solution} does not exist")
        return 2
    backend = eval_backend(args.backend)
    if backend is None:
        return 2
    from skills.evaluator.config import EvalConfig
    from skills.evaluator.ext_cache import default_dir as ext_cache_dir
    from skills.evaluator.harness.protocol import TimingConfig
    from skills.evaluator.report import format_result
    from skills.evaluator.sandbox import SandboxConfig

    baselines = [b.strip() for b in args.baselines.split(",") if b.strip()]
    if bad := [b for b in baselines if b not in ("eager", "compile")]:
        _err(f"unknown baseline(s) {', '.join(bad)}; valid: eager, compile")
        return 2
    config = EvalConfig(
        backend=backend, sizes=args.sizes, reward_fn=args.reward, gpu=args.gpu,
        baselines=cast(list[Literal["eager", "compile"]], baselines),
        timing=TimingConfig(target_seconds=args.target_seconds),
        extension_cache_dir=str(ext_cache_dir()),  # load_inline builds that passed, reused by the same code
        sandbox=SandboxConfig(allow_unsafe=True) if args.unsafe_no_sandbox else SandboxConfig(),
    )
    from skills.evaluator.reward import REWARDS

    if args.reward not in REWARDS:
        _err(f"unknown reward function {args.reward!r}; valid: {', '.join(sorted(REWARDS))}")
        return 2
    with tempfile.TemporaryDirectory(prefix="kagent-eval-ws-") as tmp:
        workspace = args.solution
        if args.solution.is_file():
            # A single KernelBench-style file: it becomes model_new.py of a workspace without kernels/.
            workspace = Path(tmp)
            shutil.copyfile(args.solution, workspace / "model_new.py")
        result = anyio.run(_evaluate, args.problem, workspace, cast("Mode", args.mode), config)
    _out(msgspec.json.format(msgspec.json.encode(result)).decode() if args.json else format_result(result))
    return 0 if result.correct and not result.flags else 1


def eval_backend(asked: str | None) -> Literal["cuda", "cpu"] | None:
    """The backend to grade on: cuda where torch sees a GPU, else cpu with a note; None (after
    one line) when cuda was asked for and there is none."""
    import torch

    if torch.cuda.is_available():
        return "cpu" if asked == "cpu" else "cuda"
    if asked == "cuda":
        _err(f"--backend cuda needs a CUDA GPU, and torch sees none here (torch {torch.__version__},"
             f" CUDA {torch.version.cuda or 'not compiled in'}); grade on this machine with --backend cpu")
        return None
    if asked is None:
        _err("note: no CUDA GPU here, so the cpu backend grades it (C++ kernels, small sizes);"
             " --backend cpu says so without this note")
    return "cpu"


async def _evaluate(problem: Path, workspace: Path, mode: Mode, config: EvalConfig) -> EvalResult:
    from skills.evaluator.baselines import JsonBaselineCache
    from skills.evaluator.evaluate import evaluate

    return await evaluate(problem, workspace, mode=mode, config=config, baseline_cache=JsonBaselineCache())


def run_problems(args: argparse.Namespace) -> int:
    # torch-free (skills.evaluator.problem imports torch): the command must start in well under a second
    from runtime.problem_list import table

    if not args.root.is_dir():
        _err(f"problems folder {args.root} does not exist")
        return 2
    for line in table(args.root, args.level):
        _out(line)
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "eval":
            return run_eval(args)
        if args.command == "problems":
            return run_problems(args)
        if args.command == "build":
            from runtime.build_command import run_build

            return run_build(args)
        if args.command == "bench":
            from runtime.bench_cli import run as run_bench

            return run_bench(args)
        from runtime.cli_runtime import run

        return run(args)
    except BrokenPipeError:  # `kagent problems list | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
