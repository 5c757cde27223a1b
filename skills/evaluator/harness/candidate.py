"""The candidate worker: imports the agent's model_new.py and kernels, then runs and times the
calls the judge asks for.

An untrusted executor: it receives the initial weights (not secret) and maps the arenas the judge
offers (skills/evaluator/harness/arena.py); for each call the judge has already written the inputs there, and
the worker copies forward's outputs back into the arena for the judge to read. It never learns
which input set a call used, whether the call is timed or checked, or how many calls remain;
reference outputs, tolerances and statistics stay in the judge and the parent. Clock references
are taken (by importing skills.evaluator.harness.timing) before any candidate code is imported.

Run as `python -m skills.evaluator.harness.candidate` with the protocol on stdin/stdout.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import msgspec
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from skills.evaluator.affinity import pin_self
from skills.evaluator.harness import arena, timing
from skills.evaluator.harness import protocol as P
from skills.evaluator.harness.judge import as_outputs, preinit, set_precision, wait_preinit
from skills.evaluator.marks import mark_sender
from skills.evaluator.results import Flag, dedupe_flags

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


CAP_HEADROOM = 1 << 30
"""Left free beyond the judge's reserve (allocator slack of both processes, the driver)."""


def cap_memory(device: torch.device, judge_reserve: int) -> None:
    """The candidate's torch allocations may grow to what it holds now plus what is free on the
    GPU once the judge holds its sets and references, less what the judge may still need: a
    candidate that runs out there fails on its own (its OOM, its fault), never the judge."""
    index = device.index if device.index is not None else torch.cuda.current_device()  # "cuda" has none
    free, total = torch.cuda.mem_get_info(index)
    cap = torch.cuda.memory_reserved(index) + free - judge_reserve - CAP_HEADROOM
    torch.cuda.set_per_process_memory_fraction(min(max(cap / total, 0.02), 0.95), index)


class Candidate:
    def __init__(self, start: P.CandStart) -> None:
        self.start = start
        self.device = torch.device(start.device)
        set_precision(start.precision)  # before any library handle: drops NVIDIA_TF32_OVERRIDE on a tf32 problem
        if self.device.type == "cuda":
            torch.cuda.init()  # type: ignore[no-untyped-call]
            torch.empty(1, device=self.device)  # create the context before candidate code runs
            if start.gpu_memory_fraction is not None:
                torch.cuda.set_per_process_memory_fraction(start.gpu_memory_fraction, torch.cuda.current_device())
        self.module: Any = None
        self.models: list[Any] = []
        self.groups: dict[int, _Group] = {}

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

    def construct(self, init: P.CandInit) -> None:
        if self.device.type == "cuda" and init.judge_reserve_bytes is not None:
            cap_memory(self.device, init.judge_reserve_bytes)
        exchange = Path(init.exchange_dir)
        self.models = [self._make_model(exchange / "init.pt")]
        if init.shape_init:
            self.models.append(self._make_model(exchange / "init_shape.pt"))

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

    # ---- serving the judge's calls over the link ----

    def serve(self, link: P.Link, mark: timing.MarkCall | None) -> None:
        """Answer the judge until it closes the link: map its arenas, run each call it asks for.
        Every call runs under no_grad entered here, once, outside the timed windows, as the judge's
        baseline loops run under one around the loop: entered inside each call, its cold path after
        the cache flush cost a call ~45-60 us on the 2-core box (an extra the baselines never paid)."""
        with torch.no_grad():
            self._serve(link, mark)

    def _serve(self, link: P.Link, mark: timing.MarkCall | None) -> None:
        spin_s = 0.0
        while True:
            if spin_s:
                link.poll(spin_s)
            try:
                msg, fds = link.recv(fds=True)
            except P.LinkClosed:
                return
            spin_s = self._spin_after(msg)
            try:
                link.send(self._answer(msg, fds, mark))
            except CandidateError as exc:
                link.send(P.Failed(stage=exc.stage, message=str(exc), flag=exc.flag))
                return
            except Exception as exc:
                link.send(P.Failed(stage="timing", message=_candidate_traceback(exc, self.start.workspace)[-4000:]))
                return

    def _spin_after(self, msg: P.LinkMessage) -> float:
        """Seconds to poll the link for the next message after answering this one: the timing's
        candidate_spin_us after a timed call on cuda, else 0 (block at once)."""
        if self.device.type != "cuda" or not isinstance(msg, P.Call) or msg.watch != "none":
            return 0.0
        g = self.groups.get(msg.group)
        return g.loop.config.candidate_spin_us / 1e6 if g is not None else 0.0

    def _answer(self, msg: P.LinkMessage, fds: list[int], mark: timing.MarkCall | None) -> P.LinkMessage:
        if isinstance(msg, P.Offer):
            return self._map(msg, fds)
        if isinstance(msg, P.Call):
            return self._call(msg, mark)
        if isinstance(msg, P.Overhead):
            return P.OverheadReport(sync_overhead_us=self.groups[msg.group].loop.sync_overhead_us(calls=1))
        if isinstance(msg, P.Profile):
            kernel_us, flags = self._profile(self.groups[msg.group].loop, msg.calls)
            return P.Profiled(kernel_us=kernel_us, flags=flags)
        raise CandidateError("timing", f"the judge sent {type(msg).__name__}, which the candidate does not serve")

    def _map(self, offer: P.Offer, fds: list[int]) -> P.Accepted:
        try:
            if self.device.type == "cuda":
                arena_ = arena.device_attach(offer.layout, offer.handle, fds[0] if fds else -1)
            else:
                arena_ = arena.host_attach(offer.layout, fds[0])
        except (ValueError, IndexError, OSError, arena.CudaError) as exc:
            raise CandidateError("correctness", f"the judge's input memory could not be mapped: {exc}") from None
        model = self.models[offer.model] if offer.model < len(self.models) else self.models[0]
        args = arena_.arguments(P.unpack_scalars(offer.scalars))
        fn = model  # called as the judge calls its baselines: the module itself, under serve's no_grad
        # Loop flushes nothing and copies nothing: the judge writes the inputs and flushes the
        # cache before each call; the loop resets persisting L2 lines, marks, leads, times.
        cfg = msgspec.structs.replace(offer.timing, flush_l2=False, work_buffers=1)
        self.groups[offer.group] = _Group(arena_, timing.Loop(fn, [args], self.device, cfg, external=True))
        return P.Accepted(group=offer.group)

    def _call(self, call: P.Call, mark: timing.MarkCall | None) -> P.Called:
        g = self.groups.get(call.group)
        if g is None:
            raise CandidateError("correctness", "the judge asked for a call on memory it never offered")
        if call.scalars is not None:
            args = g.arena.arguments(P.unpack_scalars(call.scalars))
            g.loop.works[0][:] = args
            g.loop.work = g.loop.works[0]
        loop = g.loop
        if call.lead and not loop.lead_cycles and self.device.type == "cuda":
            loop.calibrate_lead()
        flags: list[Flag] = []
        stage = "correctness" if call.watch != "none" else "timing"
        try:
            if call.watch == "none":
                with timing.no_gc():  # as the judge's baseline loops run (timing.Loop.run)
                    ev, wall, out = loop.call(0, lead=call.lead,
                                              tick=None if mark is None else functools.partial(mark, call.seq, False))
                if mark is not None:
                    mark(call.seq, True)
            else:
                with OpRecorder() as rec:
                    ev, wall, out = loop.call(0, lead=call.lead)
                flags += rec.flags()
            outs = as_outputs(out, "ModelNew")
        except Exception as exc:
            raise self._forward_failed(stage, exc) from None
        if call.lead and loop.lead_cycles:
            g.leads.append(loop.last_lead_us)
            if len(g.leads) == LEAD_CORRECTION_CALLS:
                loop.correct_lead(g.leads[len(g.leads) // 2:])
        flags += _output_flags(outs, g.arena.inputs, call.seq)
        metas = _hand_back(outs, g.arena.outputs)
        del out, outs
        if call.watch == "profiler" and self.device.type == "cpu":
            # after the output is handed back and dropped: its calls do not hold two outputs at once,
            # so the memory figure of this stretch is the kernel's own (docs/reward.md)
            try:
                flags += _profiled_ops(loop, 1)
            except Exception as exc:
                raise self._forward_failed(stage, exc) from None
        if self.device.type == "cuda":
            timing.sync()
        return P.Called(seq=call.seq, event_us=ev, wall_us=wall, lead_us=loop.last_lead_us if call.lead else 0.0,
                        outputs=metas, flags=dedupe_flags(flags))

    def _forward_failed(self, stage: str, exc: BaseException) -> CandidateError:
        return CandidateError(stage, "ModelNew.forward failed:\n" + _candidate_traceback(exc, self.start.workspace))

    def _profile(self, loop: timing.Loop, calls: int) -> tuple[float | None, list[Flag]]:
        """Kernel time per call and launch accounting from the profiler (cuda only)."""
        if self.device.type != "cuda" or calls <= 0:
            return None, []
        from skills.evaluator.harness.launches import profile_launches

        return profile_launches(loop, calls, self.start.kernel_names, self.start.flavour, self.start.libraries)


LEAD_CORRECTION_CALLS = 10
"""After this many calls with a lead, its spin count is corrected to how long the later half of
them held the GPU (the clock between calls differs from the calibration's)."""


class _Group:
    """One arena as the candidate sees it, and the loop that times calls on it."""

    def __init__(self, arena_: arena.Arena, loop: timing.Loop) -> None:
        self.arena = arena_
        self.loop = loop
        self.leads: list[float] = []


def _hand_back(outs: list[Any], slots: list[torch.Tensor]) -> list[P.OutputMeta]:
    """Copy each output that is a plain tensor of its slot's shape and dtype into the slot; say
    what each one was (the judge compares and words any mismatch)."""
    metas = []
    for i, o in enumerate(outs):
        if type(o) is not torch.Tensor:
            metas.append(P.OutputMeta(kind=type(o).__name__, shape=[], dtype="", copied=False))
            continue
        meta = P.OutputMeta(kind="Tensor", shape=list(o.shape), dtype=str(o.dtype).removeprefix("torch."), copied=False)
        if i < len(slots) and o.layout == torch.strided and o.shape == slots[i].shape and o.dtype == slots[i].dtype \
                and o.device == slots[i].device:
            _copy_out(slots[i], o)
            meta.copied = True
        metas.append(meta)
    return metas


_copy_out = torch.Tensor.copy_


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
        loop.prepare(i % n_sets)
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


def main() -> None:
    if spec := os.environ.get("KAGENT_RLIMITS"):
        from skills.evaluator.sandbox import apply_rlimits

        apply_rlimits(spec)
    pin_self(os.environ.get("KAGENT_CPUS"))
    mark = mark_sender()  # before any candidate code
    link = P.Link.inherited()
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
        init = chan.recv()
        assert isinstance(init, P.CandInit) and init.nonce == nonce
        stage = "init"
        t0 = timing.now_ns()
        cand.construct(init)
        chan.send(P.CandReady(nonce=nonce, seconds=(timing.now_ns() - t0) / 1e9))
        if link is None:
            raise CandidateError("init", "the worker was started without its link to the judge")
        cand.serve(link, mark)
    except CandidateError as exc:
        chan.send(P.WorkerError(nonce=nonce, stage=exc.stage, message=str(exc), flag=exc.flag))
    except Exception as exc:
        chan.send(P.WorkerError(nonce=nonce, stage=stage, message=_candidate_traceback(exc, start.workspace)[-4000:]))
    finally:
        sys.stdout.flush()
        os.close(chan.write_fd)


if __name__ == "__main__":
    main()
