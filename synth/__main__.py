"""``python -m synth``: synthetic training problems from torch operators.

    python -m synth generate --n 6000 --out problems/synth [--seed 0] [--workers 2]
    python -m synth ops [--probe] [--coverage]        # the operator catalogue
    python -m synth show --run DIR --index 17 [--sized] [--check]   # or --seed S (probes first)
    python -m synth check FILE... [--compile trace]   # run the filters on problem files
    python -m synth calibrate [--root problems]       # fit the H200 runtime predictor
    python -m synth summary DIR                       # the summary table of a run folder

Exit status: 0 success, 1 a checked file failed, 2 bad usage or a run that cannot start.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import msgspec

from synth.filters import FilterConfig
from synth.store import SUMMARY, SynthError


def _out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def _filters(args: argparse.Namespace) -> FilterConfig:
    return FilterConfig(min_us=args.min_us, max_us=args.max_us, max_cpu_ms=args.max_cpu_ms, compile=args.compile)


def _add_filter_flags(p: argparse.ArgumentParser) -> None:
    d = FilterConfig()
    p.add_argument("--compile", choices=["trace", "inductor", "none"], default=d.compile,
                   help="torch.compile check: trace = TorchDynamo + aot_eager (default), inductor = full compile")
    p.add_argument("--min-us", type=float, default=d.min_us, help="lowest predicted H200 eager us per call")
    p.add_argument("--max-us", type=float, default=d.max_us, help="highest predicted H200 eager us per call")
    p.add_argument("--max-cpu-ms", type=float, default=d.max_cpu_ms,
                   help="longest measured eager call at the small sizes on one CPU thread")
    p.add_argument("--timeout", type=float, default=60.0, help="seconds per candidate before its worker is killed")
    p.add_argument("--workers", type=int, default=2, help="worker processes (one CPU core each)")
    p.add_argument("--held-out", default="bundled",
                   help="held-out problems for decontamination: 'bundled' (problems/level*) or a folder")


def parser() -> argparse.ArgumentParser:
    """The command line."""
    ap = argparse.ArgumentParser(prog="python -m synth", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="generate (or resume) a problem set")
    g.add_argument("--n", type=int, required=True, help="problems to accept")
    g.add_argument("--out", type=Path, required=True, help="output folder (resumed when it holds a run)")
    g.add_argument("--seed", type=int, default=0, help="run seed: the same seed gives the same set")
    g.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_filter_flags(g)
    o = sub.add_parser("ops", help="list the operator catalogue")
    o.add_argument("--probe", action="store_true", help="run every operator (dtypes, determinism, shape rule)")
    o.add_argument("--coverage", action="store_true", help="every public torch.nn / F / pointwise op and its status")
    s = sub.add_parser("show", help="print the problem of one candidate")
    s.add_argument("--run", type=Path, default=None,
                   help="a run folder: its seed and catalogue (else --seed and a fresh probe)")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--index", type=int, required=True)
    s.add_argument("--sized", action="store_true", help="fit the default sizes as generate does")
    s.add_argument("--check", action="store_true", help="run the filters on it (in this process)")
    c = sub.add_parser("check", help="run the filters and decontamination on problem files")
    c.add_argument("files", nargs="+", type=Path)
    _add_filter_flags(c)
    k = sub.add_parser("calibrate", help="fit the H200 runtime predictor to the measured bundled problems")
    k.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent / "problems")
    m = sub.add_parser("summary", help="print the summary table of a run folder")
    m.add_argument("dir", type=Path)
    return ap


def cmd_generate(args: argparse.Namespace) -> int:
    import torch

    from synth.generate import Run, code_fingerprint, generate
    from synth.store import RunConfig
    from synth.summary import summarize

    cfg = RunConfig(seed=args.seed, filters=_filters(args), held_out=args.held_out, torch=str(torch.__version__),
                    code=code_fingerprint())
    progress = None if args.no_progress else _Bar(args.n)
    before = _accepted(args.out)
    t0 = time.monotonic()
    try:
        run: Run = generate(args.out, args.n, cfg, workers=args.workers, timeout_s=args.timeout,
                            on_progress=progress.update if progress else None)
    finally:
        if progress:
            progress.stop()
    text = summarize(args.out, wall_s=time.monotonic() - t0, workers=args.workers, new=run.accepted - before)
    (args.out / SUMMARY).write_text(text)
    _out(text)
    _out(f"{run.accepted} problems in {args.out} (manifest.jsonl, rejected.jsonl, summary.md)")
    return 0


def _accepted(out: Path) -> int:
    """Problems already accepted in ``out`` (0 for a new folder)."""
    try:
        with (out / "manifest.jsonl").open("rb") as f:
            return sum(1 for line in f if line.strip())
    except OSError:
        return 0


class _Bar:
    """A rich progress bar on stderr."""

    def __init__(self, n: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.bar = Progress(TextColumn("accepted"), BarColumn(), MofNCompleteColumn(),
                            TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=Console(stderr=True))
        self.bar.start()
        self.task = self.bar.add_task("synth", total=n, info="")
        self.start: int | None = None

    def update(self, run: object, elapsed: float) -> None:
        accepted, rejected = getattr(run, "accepted", 0), getattr(run, "rejected", 0)
        if self.start is None:
            self.start = accepted
        rate = 60 * (accepted - self.start) / elapsed if elapsed > 0 else 0.0
        self.bar.update(self.task, completed=accepted, info=f"rejected {rejected}  {rate:.0f}/min")

    def stop(self) -> None:
        self.bar.stop()


def cmd_ops(args: argparse.Namespace) -> int:
    from synth.ops import catalogue, coverage, stochastic
    from synth.probe import ProbeResult

    if args.coverage:
        for name, status in coverage().items():
            _out(f"{name:<45} {status}")
        return 0
    ops = catalogue()
    results: dict[str, ProbeResult] = {}
    if args.probe:
        from synth.probe import probe_catalogue

        _, results = probe_catalogue(ops)
    _out(f"{'operator':<40} {'family':<14} {'category':<12} {'kind':<8} {'dtypes / status'}")
    for name, op in sorted(ops.items()):
        r = results.get(name)
        status = "not probed" if r is None else ",".join(r.dtypes) if r.ok else f"DROPPED: {r.reason}"
        _out(f"{name:<40} {op.family:<14} {op.category:<12} {op.kind:<8} {status}")
    sto = stochastic()
    usable = sum(r.ok for r in results.values()) if results else None
    _out(f"\n{len(ops)} catalogued" + (f", {usable} usable after probing" if usable is not None else "")
         + f"; {len(sto)} stochastic operators known and never composed: {', '.join(sorted(sto))}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from synth.compose import compose
    from synth.filters import check, default_sizes
    from synth.generate import probed_catalogue
    from synth.render import render

    seed, cfg = args.seed, FilterConfig()
    if args.run is not None:
        from synth.store import RUN, RunConfig

        try:
            run_cfg = msgspec.json.decode((args.run / RUN).read_bytes(), type=RunConfig)
        except (OSError, msgspec.DecodeError) as e:
            raise SynthError(f"{args.run} is not a synth run folder: {e}") from None
        seed, cfg = run_cfg.seed, run_cfg.filters
    ops, dtypes, _ = probed_catalogue(args.run)
    comp = compose(seed, args.index, ops, dtypes)
    if comp is None:
        _out(f"candidate {args.index} of seed {seed}: composing got stuck (no operator fitted)")
        return 1
    defaults = default_sizes(comp, ops, cfg)[0] if args.sized else None
    _out(render(comp, ops, defaults))
    if args.check:
        v = check(comp, ops, cfg)
        _out(f"# verdict: {'ok' if v.ok else f'{v.reason}: {v.detail}'}")
        if v.features:
            _out("# " + msgspec.json.encode(v.features).decode())
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from synth.dedup import THRESHOLD, Index, held_out_sources, shingles
    from synth.filters import Verdict
    from synth.generate import held_out_path
    from synth.workers import Job, WorkerPool

    sources = {}
    for k, f in enumerate(args.files):
        try:
            sources[k] = f.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise SynthError(f"cannot read {f}: {e}") from None
    index = Index(held_out_sources(held_out_path(args.held_out)))
    verdicts: dict[int, Verdict] = {}
    # Finished files need no catalogue: the workers only load and run them.
    with WorkerPool(min(args.workers, len(sources)), {}, _filters(args), timeout_s=args.timeout) as pool:
        todo = list(sources)
        while len(verdicts) < len(sources):
            while todo and pool.idle():
                k = todo.pop(0)
                pool.submit(Job(index=k, kind="source", source=sources[k], name=args.files[k].stem))
            for v in pool.poll(0.2):
                verdicts[v.index] = v
    failed = 0
    for k, f in enumerate(args.files):
        v = verdicts[k]
        name, sim = index.nearest_held_out(shingles(sources[k]))
        dup = sim >= THRESHOLD and not f.resolve().is_relative_to(held_out_path(args.held_out).resolve())
        ok = v.ok and not dup
        failed += not ok
        why = "ok" if ok else f"{v.reason}: {v.detail}" if not v.ok else f"near_duplicate_eval: {sim:.3f} to {name}"
        _out(f"{f}: {why} (nearest held-out {name} at {sim:.3f}; {v.seconds:.2f} s)")
    return 1 if failed else 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    from synth.predict import calibrate

    cal = calibrate(args.root)
    _out(f"{'problem':<45} {'measured us':>12} {'predicted us':>13} {'ratio':>6}")
    for r in cal.rows:
        _out(f"{r.name:<45} {r.measured_us:>12.1f} {r.predicted_us:>13.1f} {r.measured_us / r.predicted_us:>6.2f}")
    _out(f"\nfit: HBM_BPS {cal.bw:.2e} B/s, LAUNCH_US {cal.launch_us:g}; measured/predicted geometric mean "
         f"{cal.geomean_ratio}, log-sd {cal.log_sd}, worst {cal.worst_ratio} ({len(cal.rows)} problems)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = parser().parse_args(argv)
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "generate": cmd_generate, "ops": cmd_ops, "show": cmd_show, "check": cmd_check,
        "calibrate": cmd_calibrate, "summary": lambda a: _summary(a.dir)}
    try:
        return int(commands[args.command](args))
    except SynthError as e:
        sys.stderr.write(f"synth: error: {e}\n")
        return 2
    except BrokenPipeError:  # `python -m synth ops | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _summary(out: Path) -> int:
    from synth.summary import summarize

    if not out.is_dir():
        raise SynthError(f"{out} is not a folder")
    _out(summarize(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
