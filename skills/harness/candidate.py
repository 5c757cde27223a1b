"""The candidate worker: imports the agent's model_new.py and kernels, runs and times them.

It receives the initial weights and the seeds of the input sets it runs (it draws those inputs
itself: skills/harness/exchange.py); reference outputs, tolerances and statistics stay in the
judge and the parent. Clock references are taken (by importing skills.harness.timing) before
any candidate code is imported.

Run as `python -m skills.harness.candidate` with the protocol on stdin/stdout.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from skills.affinity import pin_self
from skills.harness import protocol as P
from skills.harness import timing
from skills.harness.exchange import draw_inputs, fingerprint, same_fingerprint, write_output
from skills.harness.judge import as_outputs, preinit, set_precision, wait_preinit
from skills.marks import mark_sender
from skills.problem import ProblemError, load_problem
from skills.results import Flag

SHIM_DIR = str(Path(__file__).parent / "shim")


class CandidateError(Exception):
    """A failure the agent caused; `stage` says where, `flag` names a broken rule."""

    def __init__(self, stage: str, message: str, flag: Flag | None = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.flag = flag


def _candidate_traceback(exc: BaseException, workspace: str) -> str:
    """The exception with only the frames from the agent's files (the harness is not its business)."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.startswith(workspace)]
    lines = [f'  File "{Path(f.filename).name}", line {f.lineno}, in {f.name}\n    {f.line}' for f in frames[-6:]]
    text = "\n".join(lines)
    return f"{text}\n{type(exc).__name__}: {exc}" if text else f"{type(exc).__name__}: {exc}"


class Candidate:
    def __init__(self, start: P.CandStart) -> None:
        self.start = start
        self.device = torch.device(start.device)
        set_precision(start.precision)
        if self.device.type == "cuda":
            torch.cuda.init()  # type: ignore[no-untyped-call]
            torch.empty(1, device=self.device)  # create the context before candidate code runs
            if start.gpu_memory_fraction is not None:
                torch.cuda.set_per_process_memory_fraction(start.gpu_memory_fraction, torch.cuda.current_device())
        self.model: Any = None
        self.module: Any = None
        self.sets: list[list[Any]] = []
        self.get_inputs: Any = None
        self.shape_model: Any = None
        self.shape_get_inputs: Any = None

    def import_model(self) -> None:
        sys.path.insert(0, SHIM_DIR)
        import kagent_ext

        if self.start.flavour == "c_abi" and self.start.lib_path:
            kagent_ext._bind(self.start.lib_path, self.start.functions, self.device.type)
        elif self.start.flavour == "torch" and self.start.lib_path:
            spec = importlib.util.spec_from_file_location(Path(self.start.lib_path).stem.split(".")[0], self.start.lib_path)
            if spec is None or spec.loader is None:
                raise CandidateError("import", f"cannot load the built extension {self.start.lib_path}")
            ext = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(ext)
            kagent_ext._bind_module(ext)
        path = Path(self.start.workspace) / "model_new.py"
        if not path.is_file():
            raise CandidateError("import", "model_new.py does not exist: write it with write_file")
        sys.path.insert(0, self.start.workspace)
        spec = importlib.util.spec_from_file_location("model_new", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            raise CandidateError("import", "importing model_new.py failed:\n" + _candidate_traceback(exc, self.start.workspace)) from None
        if not isinstance(getattr(module, "ModelNew", None), type):
            raise CandidateError("import", "model_new.py defines no class ModelNew")
        self.module = module

    def construct(self, run: P.CandRun) -> None:
        exchange = Path(run.exchange_dir)
        try:
            self.get_inputs = load_problem(exchange / "problem.py", sizes=run.sizes).get_inputs
            if run.shape_sizes:
                self.shape_get_inputs = load_problem(exchange / "problem.py", sizes=run.shape_sizes).get_inputs
        except ProblemError as exc:
            raise CandidateError("init", f"the problem could not be loaded in the candidate's process: {exc}") from None
        self.model = self._make_model(exchange / "init.pt")
        if run.shape_sizes:
            self.shape_model = self._make_model(exchange / "init_shape.pt") if run.shape_init else self.model

    def _make_model(self, init_path: Path) -> Any:
        init = torch.load(init_path, weights_only=False)  # written by the trusted judge
        try:
            model = self.module.ModelNew(*init["init_inputs"])
        except Exception as exc:
            raise CandidateError("init", "ModelNew(*get_init_inputs()) failed:\n" + _candidate_traceback(exc, self.start.workspace)) from None
        if not isinstance(model, torch.nn.Module):
            raise CandidateError("init", "ModelNew is not a torch.nn.Module")
        try:
            model.load_state_dict(init["state_dict"], strict=True)
        except RuntimeError as exc:
            raise CandidateError("init", f"ModelNew cannot load Model's state_dict (keep Model's parameter names and shapes): {exc}") from None
        return model.to(self.device)

    def draw(self, seed: int, want: list[float], label: str, get_inputs: Any = None) -> list[Any]:
        """The input set of this seed, checked against the judge's checksums."""
        inputs = draw_inputs(get_inputs or self.get_inputs, seed, self.device)
        if not same_fingerprint(fingerprint(inputs), want):
            raise CandidateError("correctness", f"the inputs drawn for {label} differ from the judge's: model_new.py"
                                 " (or its kernels) changed torch's random generator or defaults at import time")
        return inputs

    def correctness(self, run: P.CandRun, parts: timing.Parts) -> P.CandOutputs:
        flags: list[Flag] = []
        jobs = [(k, seed, want, f"input set {k}", self.get_inputs, self.model)
                for k, (seed, want) in enumerate(zip(run.set_seeds, run.fingerprints, strict=True))]
        if run.shape_sizes:
            # The shape check's set (other sizes, never timed) goes first, before the big sets are
            # allocated: a kernel that hard-codes a larger shape then reads and writes past its
            # buffers into unmapped memory and faults, instead of into the other sets' memory.
            jobs.insert(0, (len(jobs), run.shape_seed, run.shape_fingerprint,
                            f"the shape check's set ({run.shape_sizes} sizes)", self.shape_get_inputs, self.shape_model))
        results: list[list[P.OutputFile]] = [[] for _ in jobs]
        for k, seed, want, label, get_inputs, model in jobs:
            with parts("draw"):
                inputs = self.draw(seed, want, label, get_inputs)
                pristine = [a.clone() if isinstance(a, torch.Tensor) else a for a in inputs]
                if k < len(run.set_seeds):
                    self.sets.append(pristine)
            with parts("run"), OpRecorder() as rec:
                outs = self._call(inputs, "correctness", model)
            with parts("checks"):
                flags += rec.flags()
                flags += _output_flags(outs, inputs, k)
                if any(isinstance(a, torch.Tensor) and not torch.equal(a, b) for a, b in zip(inputs, pristine, strict=True)):
                    flags.append(Flag(name="input_mutation", detail=f"forward wrote into its inputs (input set {k}); inputs are read-only"))
            with parts("write"):
                # Only plain tensors travel (a subclass is flagged above), as raw bytes.
                results[k] = [write_output(o, run.out_dir, k, i) for i, o in enumerate(outs)]
        return P.CandOutputs(nonce=run.nonce, outputs=results, flags=_dedupe(flags), seconds=parts.seconds)

    def _call(self, inputs: list[Any], stage: str, model: Any = None) -> list[Any]:
        try:
            with torch.no_grad():
                out = (self.model if model is None else model)(*inputs)
            if self.device.type == "cuda":
                torch.cuda.synchronize(self.device)
            return as_outputs(out, "ModelNew")
        except Exception as exc:
            raise CandidateError(stage, "ModelNew.forward failed:\n" + _candidate_traceback(exc, self.start.workspace)) from None

    def time(self, req: P.CandTime, mark: timing.MarkCall | None = None) -> P.CandTiming:
        parts = timing.Parts()
        with parts("canary draw"):
            canaries = [self.draw(seed, want, "a canary set")
                        for seed, want in zip(req.canary_seeds, req.canary_fingerprints, strict=True)]
        n_sets = len(self.sets)
        loop = timing.Loop(self._forward, self.sets + canaries, self.device, req.timing)
        with parts("warm-up"):
            mean = loop.warmup(P.rotation(n_sets, max(3 * n_sets, req.timing.warmup_calls)))
        n = loop.n_calls(mean)
        order = P.timed_order(n_sets, n, req.canary_fractions)
        positions = [torch.tensor(p, dtype=torch.long, device=self.device) for p in req.sample_positions]
        spot: list[list[torch.Tensor]] = []
        flags: list[Flag] = []

        def after(i: int, out: Any) -> None:
            outs = as_outputs(out, "ModelNew")
            if any(type(o) is not torch.Tensor for o in outs):
                flags.append(Flag(name="lazy_output", detail="a timed call returned something other than a plain torch.Tensor"))
                outs = [torch.as_tensor(o) for o in outs]
            spot.append([o.detach().reshape(-1)[p] if o.numel() > int(p.max()) else torch.full_like(p, 0, dtype=o.dtype)
                         for o, p in zip(outs, positions, strict=False)])

        try:
            with parts("timed loop"):
                samples = loop.run(order, after, mark)
            with parts("caller calls"):
                samples.caller_us = loop.caller_times(P.rotation(n_sets, req.timing.caller_calls))
        except Exception as exc:
            raise CandidateError("timing", "ModelNew.forward failed during timing:\n" + _candidate_traceback(exc, self.start.workspace)) from None
        if self.device.type == "cuda" and req.profile_calls:
            with parts("profiler"):
                kernel_us, launch_flags = self._profile(loop, req.profile_calls)
            samples.kernel_us = kernel_us
            flags += launch_flags
        with parts("probe"):
            flags += self._probe(loop, n_sets)
        spot_values = [[t.double().cpu().tolist() for t in call] for call in spot]
        return P.CandTiming(nonce=req.nonce, samples=samples, set_order=order, spot=spot_values, flags=_dedupe(flags),
                            seconds=parts.seconds)

    def _probe(self, loop: timing.Loop, n_sets: int, calls: int = 3) -> list[Flag]:
        """Calls after the timed loop, like timed ones, under the op recorder: code that behaves
        only for the first calls (correctness, warm-up) still runs torch ops here. On cpu, two
        more under the profiler with no dispatch mode active, for code that runs its kernel only
        while it sees a dispatch mode (cuda has the profiler's launch accounting instead)."""
        flags: list[Flag] = []
        for i in range(calls):
            loop._prepare(i % n_sets)  # the harness's own copies and cache flush are not recorded
            loop.lead()  # as in a timed call, so the GPU's state does not tell the probe apart
            with OpRecorder() as rec:
                loop.fn(*loop.work)
            flags += rec.flags()
        if self.device.type == "cpu":
            flags += _profiled_ops(loop, n_sets)
        return flags

    def _forward(self, *args: Any) -> Any:
        with torch.no_grad():
            return self.model(*args)

    def _profile(self, loop: timing.Loop, calls: int) -> tuple[float | None, list[Flag]]:
        """Kernel time per call and launch accounting from the profiler (cuda only)."""
        from skills.harness.launches import profile_launches

        return profile_launches(loop, calls, self.start.kernel_names, self.start.flavour)


# aten ops a forward may run: allocation, views and bookkeeping, no arithmetic or copies.
ALLOWED_ATEN = {
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "zeros", "zeros_like", "zero_",
    "fill_", "view", "_unsafe_view", "reshape", "_reshape_alias", "as_strided", "detach", "alias", "t",
    "transpose", "permute", "expand", "select", "slice", "unsqueeze", "squeeze", "split", "chunk",
    "unbind", "narrow", "lift_fresh", "set_", "resize_", "is_nonzero", "size", "stride", "sym_size",
    "sym_stride", "sym_numel", "dim", "is_contiguous", "unflatten", "flatten", "view_as", "split_with_sizes",
}


class OpRecorder(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Records the aten ops a call runs (through Python or C++ ATen); compute ones are a fallback."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.compute: set[str] = set()

    def flags(self) -> list[Flag]:
        if not self.compute:
            return []
        return [fallback_flag(self.compute)]

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        if name not in ALLOWED_ATEN:
            self.compute.add(name)
        return func(*args, **(kwargs or {}))


def fallback_flag(ops: set[str], how: str = "") -> Flag:
    """torch_fallback naming (up to 6 of) the aten compute ops a forward ran."""
    return Flag(name="torch_fallback", detail=f"forward ran torch compute ops{how}: "
                + ", ".join(sorted(ops)[:6]) + "; compute must happen in your own kernels")


def _profiled_ops(loop: timing.Loop, n_sets: int, calls: int = 2) -> list[Flag]:
    """aten compute ops the CPU profiler saw in `calls` calls (no dispatch mode is active)."""
    from torch.profiler import ProfilerActivity, profile

    seen: set[str] = set()
    for i in range(calls):
        loop._prepare(i % n_sets)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            loop.fn(*loop.work)
        for event in prof.events():
            name = event.name.removeprefix("aten::") if event.name.startswith("aten::") else None
            if name is not None and name not in ALLOWED_ATEN and not _composite(name):
                seen.add(name)
    return [fallback_flag(seen, " while unobserved by a dispatch mode (seen by the profiler)")] if seen else []


def _composite(op: str) -> bool:
    """An op with no kernel of its own (`contiguous`, `to`, ...): the profiler shows it as a wrapper,
    and what it really runs (a copy, if any) appears as its own event; the recorder never sees it."""
    packet = getattr(torch.ops.aten, op, None)
    if packet is None:
        return False
    checked = 0
    for overload in packet.overloads():
        full = f"aten::{op}" + ("" if overload == "default" else f".{overload}")
        try:
            composite = torch._C._dispatch_has_kernel_for_dispatch_key(full, "CompositeImplicitAutograd")
        except RuntimeError:  # an overload only TorchScript registers
            continue
        if not composite:
            return False
        checked += 1
    return checked > 0


def warm_recorder() -> None:
    """Enter the op recorder once while waiting for the job: the first dispatch mode imports
    torch._dynamo (~1.4 s), which would otherwise land in the first correctness call."""
    with OpRecorder():
        torch.empty(1).zero_()


def _output_flags(outs: list[Any], inputs: list[Any], k: int) -> list[Flag]:
    """Row 3 of EXPLOITS.md: outputs are plain dense tensors with storage of their own."""
    flags = []
    input_ptrs = {a.untyped_storage().data_ptr() for a in inputs if isinstance(a, torch.Tensor)}
    for i, o in enumerate(outs):
        if type(o) is not torch.Tensor:
            flags.append(Flag(name="lazy_output", detail=f"output {i} is a {type(o).__name__}, not a plain torch.Tensor"))
        elif o.layout != torch.strided:
            flags.append(Flag(name="lazy_output", detail=f"output {i} has layout {o.layout}; return a dense tensor"))
        elif o.numel() and o.untyped_storage().data_ptr() in input_ptrs:
            flags.append(Flag(name="output_aliases_input", detail=f"output {i} shares memory with an input (set {k})"))
    return flags


def _dedupe(flags: list[Flag]) -> list[Flag]:
    seen: dict[str, Flag] = {}
    for f in flags:
        seen.setdefault(f.name, f)
    return list(seen.values())


def main() -> None:
    if spec := os.environ.get("KAGENT_RLIMITS"):
        from skills.sandbox import apply_rlimits

        apply_rlimits(spec)
    pin_self(os.environ.get("KAGENT_CPUS"))
    mark = mark_sender()  # before any candidate code
    chan = P.take_over_stdio()
    warm_recorder()  # CPU only: at once
    wait_preinit(chan)
    preinit()
    chan.send(P.Warm())
    start = chan.recv()
    assert isinstance(start, P.CandStart)
    nonce = start.nonce
    stage = "import"
    try:
        cand = Candidate(start)
        cand.import_model()
        chan.send(P.CandImported(nonce=nonce))
        run = chan.recv()
        assert isinstance(run, P.CandRun) and run.nonce == nonce
        stage = "init"
        parts = timing.Parts()
        with parts("init"):
            cand.construct(run)
        stage = "correctness"
        chan.send(cand.correctness(run, parts))
        while True:  # one timed loop per request: the final evaluation's paired rounds send several
            try:
                req = chan.recv()
            except EOFError:
                return
            if not (isinstance(req, P.CandTime) and req.nonce == nonce):
                return
            stage = "timing"
            chan.send(cand.time(req, mark))
    except CandidateError as exc:
        chan.send(P.WorkerError(nonce=nonce, stage=exc.stage, message=str(exc), flag=exc.flag))
    except Exception as exc:
        chan.send(P.WorkerError(nonce=nonce, stage=stage, message=_candidate_traceback(exc, start.workspace)[-4000:]))
    finally:
        sys.stdout.flush()
        os.close(chan.write_fd)


if __name__ == "__main__":
    main()
