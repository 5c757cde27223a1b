"""`kagent build WORKSPACE [--backend cuda|cpu]`: the compile skill from the command line.

Runs the static checks of model_new.py and kernels/ (the rule book the grader applies), then builds
kernels/ exactly as the compile skill does, and prints the same report: exported functions, per
kernel registers / shared memory / spills, the CUDA libraries found, trimmed errors and warnings.
It needs no GPU: the architecture is the visible GPU's, else --arch (default sm_90).

Exit status: 0 when the library built and no static check fired; 1 when the build failed, a check
fired, or kernels/ holds no source; 2 when WORKSPACE is not a folder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import msgspec

from skills.evaluator.build import BuildConfig, BuildResult, build, detect_arch
from skills.evaluator.report import format_build
from skills.evaluator.results import Flag
from skills.evaluator.static_check import check_workspace

_SOURCE_SUFFIXES = (".cu", ".cpp")


def add_build_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `kagent build` on the CLI's subparsers."""
    p = sub.add_parser("build", help="static checks + compile of a workspace's kernels/ (no GPU needed)")
    p.add_argument("workspace", type=Path, help="workspace dir (model_new.py + kernels/)")
    p.add_argument("--backend", choices=["cuda", "cpu"], default="cuda", help="which compilers (default cuda)")
    p.add_argument("--arch", default=None, help="nvcc target, e.g. sm_90 (default: the visible GPU's, else sm_90)")
    p.add_argument("--json", action="store_true", help="print the static-check flags and the BuildResult as JSON")


def run_build(args: argparse.Namespace) -> int:
    """The command's body; returns the exit status."""
    ws: Path = args.workspace
    if not ws.is_dir():
        sys.stderr.write(f"kagent: workspace {ws} is not a directory\n")
        return 2
    flags = check_workspace(ws)
    kdir = ws / "kernels"
    has_sources = kdir.is_dir() and any(p.suffix in _SOURCE_SUFFIXES for p in kdir.iterdir())
    result: BuildResult | None = None
    if has_sources:
        arch = args.arch or (detect_arch() if args.backend == "cuda" else None) or "sm_90"
        result = build(kdir, BuildConfig(backend=args.backend, arch=arch))
    if args.json:
        doc = {"flags": msgspec.to_builtins(flags), "build": msgspec.to_builtins(result)}
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc)).decode() + "\n")
    else:
        sys.stdout.write(report(flags, result) + "\n")
    return 0 if result is not None and result.ok and not flags else 1


def report(flags: list[Flag], result: BuildResult | None) -> str:
    """The static checks' verdict, then the compile skill's report."""
    lines = [f"FLAG {f.name}: {f.detail}" for f in flags]
    lines.append(f"static checks: {len(flags)} flag(s), the grader would score this -1" if flags
                 else "static checks: passed")
    if result is None:
        lines.append("kernels/ holds no .cu or .cpp source: nothing to build")
        return "\n".join(lines)
    lines.append(format_build(result))
    return "\n".join(lines)
