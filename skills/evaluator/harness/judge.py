"""The judge worker: trusted, never imports candidate code.

It loads the problem, draws the input sets from seeds derived from the secret seed, computes the
reference outputs (under the precision policy, and in fp64), and writes only the initial weights
where the candidate can read them. It then drives the candidate's calls over the link
(skills/evaluator/harness/driver.py): it hands each call's inputs over just in time, reads the outputs
itself, compares them, and checks a random subset of the timed calls. It times the baselines.

Run as `python -m skills.evaluator.harness.judge` with the protocol on stdin/stdout.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, cast

import torch

from skills.evaluator.affinity import pin_self
from skills.evaluator.harness import protocol as P
from skills.evaluator.harness.compare import (
    CHUNK,
    STRICT,
    Budget,
    BudgetUndefined,
    NotFinitePieces,
    Reference,
    budget_for,
    compare_output,
    reduction_length,
)
from skills.evaluator.harness.driver import (
    CandidateFault,
    Driver,
    Echo,
    JudgeLate,
    loop_plan,
    warm_mean,
)
from skills.evaluator.harness.exchange import draw_inputs, to_device
from skills.evaluator.harness.memory import SLICE_TERM, batch_rows, slice_rows, too_big
from skills.evaluator.harness.peak import Peak, model_bytes
from skills.evaluator.harness.timing import Loop, Parts, calls_for, now_ns, within_budget
from skills.evaluator.problem import (
    LoadedProblem,
    ProblemError,
    Sizes,
    load_problem,
    shape_check_sizes,
)
from skills.evaluator.results import Flag, SetResult, dedupe_flags
from skills.evaluator.schedstat import OwnWait, TreeClock, TreeSample, cpu_between


def set_precision(precision: str) -> None:
    """TF32 only where the policy allows it; the reference and baselines obey the same policy.

    Both workers start with NVIDIA_TF32_OVERRIDE=0 (skills/evaluator/launch.py: they start before the
    problem is known); a tf32 problem allows TF32, so the override goes here, before the first
    cuBLAS/cuDNN handle is made (they read the variable then)."""
    allow = precision == "tf32"
    if allow:
        os.environ.pop("NVIDIA_TF32_OVERRIDE", None)
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")


def as_outputs(value: object, who: str) -> list[Any]:
    """Model outputs as a list: a tensor, or a tuple/list of tensors."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (tuple, list)) and value:
        return list(value)
    raise TypeError(f"{who} returned {type(value).__name__}; expected a tensor or a tuple of tensors")


def _same_value(a: Any, b: Any) -> bool:
    """Equal init inputs (tensors by value; no elementwise truth values)."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and bool(torch.equal(a, b))
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


TIMED_SEEDS = 1 << 40
"""derive_seed indices of the timed calls' input sets start here (round r's call i: TIMED_SEEDS
+ r * CALLS_PER_ROUND + i), far from the correctness sets' (0, 1, ...)."""
CALLS_PER_ROUND = 1 << 20


def set_seed(seed: int, index: int) -> None:
    torch.manual_seed(P.derive_seed(seed, index))


SAMPLE = 1 << 20
"""Elements of each output the degeneracy test reads (all of them below this)."""
RANDOM_SEED = -4
"""derive_seed index of the RNG state the Model is run again from (beside set 0's reference) to
tell a random forward."""
RANDOM_RTOL = 1e-3
"""Two runs of a Model differing by more than this share of its output's RMS draw random numbers."""
SAMPLE_SEED = -1000
"""derive_seed index of output i's sample positions: SAMPLE_SEED + i."""


def _forward64(model64: Any, args: list[Any]) -> Any:
    """The fp64 copy's forward with torch's default dtype fp64, so that what the forward makes
    itself (`torch.randn(...)` for a missing state, `torch.zeros`, `torch.arange(..., dtype=float)`
    by default) is fp64 beside its fp64 inputs: KernelBench's level3/35_LSTM draws h0/c0 that way,
    and its fp64 reference crashed on fp32 state beside fp64 input (H200, 2026-12-03)."""
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return model64(*args)
    finally:
        torch.set_default_dtype(before)


def _sample(ref: Reference, idx: torch.Tensor | None) -> Reference:
    """The reference at the elements `idx` (None: ref itself)."""
    if idx is None:
        return ref
    return Reference(ref.r.reshape(-1)[idx], ref.r64_at(idx), ref.mode)


def _peak(ref: Reference) -> float:
    """max |r64| (NaN as 0, inf as the largest double), a CHUNK at a time (no whole copy)."""
    peak = 0.0
    for lo in range(0, ref.r.numel(), CHUNK):
        peak = max(peak, float(ref.r64_of(lo, lo + CHUNK).abs().nan_to_num(0.0).max()))
    return peak


class _OwnCpu:
    """What the candidate's threads did around each timed call, read by the judge from /proc (the
    candidate cannot change the kernel's counts): its main thread's run-queue wait and its other
    threads' CPU from the request to the answer, and that CPU between calls, when it has nothing
    to do (P.ThreadReport). Its main thread's own work between calls (freeing an output) is the
    harness's, and counts nowhere."""

    def __init__(self, clock: TreeClock | None, pid: int | None) -> None:
        self.clock, self.pid = clock, pid
        self.first = self.prev = clock.sample() if clock is not None else None
        self.start: TreeSample | None = None
        self.waited: list[int] = []
        self.others: list[int] = []
        self.idle_cpu = self.idle_ns = self.seen_root = 0
        self.threads = len(self.first.tasks) if self.first else 0
        self.ok = self.first is not None
        self.in_call = self.closed = False

    def _read(self, since: TreeSample | None) -> TreeSample | None:
        """The tree now, or None (and no report) once a read fails or there is nothing to diff."""
        s = self.clock.sample() if self.ok and self.clock is not None and since is not None else None
        self.ok = self.ok and s is not None
        return s

    def _between(self) -> TreeSample | None:
        """Counts the stretch since the last answer (or the first read) as between calls; the read."""
        s = self._read(self.prev)
        if s is None or self.prev is None:
            return None
        self.idle_cpu += cpu_between(self.prev, s, main=self.pid)
        self.idle_ns += s.t_ns - self.prev.t_ns
        self.seen_root += cpu_between(self.prev, s, only=self.pid)
        return s

    def before(self) -> None:
        s = self._between()
        if s is not None:
            self.start, self.in_call = s, True

    def after(self) -> None:
        s = self._read(self.start)
        if s is None or self.start is None:
            return
        self.waited.append(max(0, s.main_wait_ns - self.start.main_wait_ns))
        self.others.append(cpu_between(self.start, s, main=self.pid))
        self.seen_root += cpu_between(self.start, s, only=self.pid)
        self.threads = max(self.threads, len(s.tasks))
        self.prev, self.in_call = s, False

    def settle(self) -> None:
        """When the judge runs late: the stretch since the last answer, if no reading has counted it
        (the judge learns it is late as it waits for an answer, and a wait that follows no before(),
        such as an offer's, left it unread). Nothing while a call's request is out (before() read up
        to it) nor once closed (a stage after the loop is judged on the loop's evidence alone: its
        own calls' CPU is not between calls)."""
        if not self.in_call and not self.closed:
            self.prev = self._between() or self.prev

    def close(self) -> None:
        self.closed = True
        if self.clock is not None:
            self.clock.close()

    def report(self) -> P.ThreadReport | None:
        if not self.ok or self.first is None or self.prev is None or not self.waited:
            return None
        total = (self.prev.process_ns - self.first.process_ns
                 if self.prev.process_ns is not None and self.first.process_ns is not None else None)
        cores = 0
        with contextlib.suppress(OSError):
            cores = len(os.sched_getaffinity(self.pid or 0))
        return P.ThreadReport(waited_ns=self.waited, others_ns=self.others, idle_cpu_ns=self.idle_cpu,
                              idle_ns=self.idle_ns, unseen_ns=max(0, total - self.seen_root) if total is not None else 0,
                              cpu_ns=total or 0, threads=self.threads, cores=cores)


@contextlib.contextmanager
def _late_blame(own: _OwnCpu | None, stage: str = "timing") -> Iterator[None]:
    """A stage in which the judge's own work ran late (JudgeLate) is the environment's fault,
    unless the candidate's threads worked between its calls meanwhile: a candidate that keeps the
    machine busy to slow the judge's draws and checks past their limit (and so turn its own -1
    into an unscored stage) is flagged for that work instead."""
    try:
        yield
    except JudgeLate as exc:
        if own is not None:
            own.settle()
        if own is None or not own.ok:
            raise
        from skills.evaluator.timing_checks import idle_work_flags  # the judge needs it only here

        calls = "timed calls" if stage == "timing" else "correctness calls"
        flags = idle_work_flags(own.idle_cpu, own.idle_ns, f"between the {calls}, while the judge worked")
        if not flags:
            raise
        raise CandidateFault(stage, f"{flags[0].detail} ({exc})", flags[0]) from None


def planned_sets(loaded: LoadedProblem, hold: int, shape_check: bool) -> int:
    """Input sets the memory plan counts as held: the regular ones, and the shape set where the
    problem has one (counted at the timed sizes, an upper bound of its own smaller ones). A
    KernelBench file has no SMALL_SIZES, hence no shape set: counted anyway, it refused five
    level-1 problems on the H200 (InstanceNorm: 150 GiB planned, 124 without it, 139 free)."""
    return hold + int(shape_check and shape_check_sizes(loaded) is not None)


class Judge:
    def __init__(self, start: P.JudgeStart) -> None:
        self.start = start
        self.device = torch.device(start.device)
        self.start_parts = Parts()
        with self.start_parts("load"):
            self.loaded = load_problem(start.problem_path, sizes=start.sizes)
        # Before anything is allocated: a problem too big for this machine is refused in seconds.
        # held at once: the regular sets and the shape set (the plan adds a timed call's own set,
        # the arena and a baseline's buffers)
        self.hold = max(1, min(start.held_sets or start.n_sets, start.n_sets))
        """Regular sets held with their references (the rest are drawn again when checked)."""
        why = too_big(self.loaded, planned_sets(self.loaded, self.hold, start.shape_check), self.device)
        if why is not None and self.hold > 1:
            # Stream instead: set 0 held, each other set drawn, referenced, checked and freed.
            self.hold = 1
            why = too_big(self.loaded, planned_sets(self.loaded, 1, start.shape_check), self.device)
        self.sliced = False
        """Each fp64 reference is computed in batch slices (`_references`): the whole one does not fit."""
        self._why_big = "" if why is None else why
        """Why the whole fp64 reference does not fit (a refusal names it when slicing cannot be done)."""
        self._separable_seen: bool | None = None
        if why is not None:  # the smallest need: r64 in batch slices (the same as whole where nothing can be sliced)
            why_sliced = too_big(self.loaded, planned_sets(self.loaded, 1, start.shape_check), self.device, sliced=True)
            self.sliced, why = why_sliced is None, why_sliced
        if why is not None:
            raise ProblemRefused(why)
        self.precision = self.loaded.problem.precision
        set_precision(self.precision)
        set_seed(start.seed, -1)
        with self.start_parts("models"):
            self.init_inputs = list(self.loaded.get_init_inputs())
            self.model, self.model64, self.state = self._models(self.loaded, self.init_inputs)
        with self.start_parts("budget"):
            self.budget = self._budget(start)
        self.exchange = Path(start.exchange_dir)
        self.refs: list[list[Reference]] = []
        self.samples: list[list[Reference]] = []
        """Per regular set, each output's reference at up to SAMPLE elements (the same ones in every
        set): the degeneracy test reads these, so no set's whole references need be held for it."""
        self._sample_idx: dict[int, torch.Tensor | None] = {}
        self.compiled: Any = None
        self.sets: list[list[Any]] = []
        self.shape_inputs: list[Any] = []
        self.shape_refs: list[Reference] = []
        self.shape_sizes: Sizes | None = None
        self.shape_own_model = False
        self.parts = Parts()
        self.driver: Driver | None = None
        self.echo: Echo | None = None

    def _models(self, loaded: LoadedProblem, init_inputs: list[Any]) -> tuple[Any, Any, dict[str, Any]]:
        """Model(*init_inputs), initialised from torch's generator as the caller seeded it: on the
        device, its fp64 twin, and its initial state dict (what the candidate loads).

        The twin is a second Model built from the same generator state and loaded with the same
        state dict, not a deepcopy: deepcopy shares what it cannot copy, so a model whose forward
        calls a lambda closed over its own submodule (KernelBench level3/44's `self.mlpf`) ran its
        fp64 copy through the fp32 original's layers ("mat1 and mat2 must have the same dtype")."""
        rng = torch.random.get_rng_state()
        model = loaded.Model(*init_inputs)
        after = torch.random.get_rng_state()
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        torch.random.set_rng_state(rng)
        twin = loaded.Model(*init_inputs)
        torch.random.set_rng_state(after)
        twin.load_state_dict(state)
        return model.to(self.device), twin.to(self.device).double(), state

    def _write_init(self, name: str, init_inputs: list[Any], state: dict[str, Any]) -> None:
        torch.save({"init_inputs": init_inputs, "state_dict": state}, self.exchange / name)

    def _references(self, model: Any, model64: Any, inputs: list[Any], random_check: bool = False) -> list[Reference]:
        """The outputs under the precision policy and in fp64 (in batch slices where the whole fp64
        forward does not fit: `sliced`); `random_check` (set 0): first refuse a forward that draws
        random numbers (`_refuse_random`)."""
        with torch.no_grad():
            r = as_outputs(model(*inputs), "Model")
            if random_check:
                self._refuse_random(model, inputs, r)
            if self.sliced:
                try:
                    return self._sliced_references(model64, inputs, r)
                except NotFinitePieces:
                    pass  # measured whole below (a non-finite reference: the careful way needs r64 whole)
            r64 = as_outputs(_forward64(model64, to_device(inputs, self.device, double=True)), "Model")
        return [Reference(a.detach(), b.detach().double(), self.budget) for a, b in zip(r, r64, strict=True)]

    def _sliced_references(self, model64: Any, inputs: list[Any], r: list[Any]) -> list[Reference]:
        """r64 computed `slice_rows` batch rows at a time and measured piece by piece into each
        output's Reference (r64 is never whole). Refused where row b of an output depends on other
        rows than b (`_separable`, checked once on this set). An output of its own each: a problem
        with k outputs runs its fp64 forward k times."""
        rows = batch_rows(inputs, r)
        if rows is None or not self._separable(model64, inputs, rows):
            raise ProblemRefused(self._why_big + "; and its fp64 reference cannot be computed in batch slices"
                                 " (an output's rows depend on other input rows than their own)")
        step = slice_rows(inputs, r)

        def pieces(j: int) -> Iterator[torch.Tensor]:
            for lo in range(0, rows, step):
                out = as_outputs(_forward64(model64, self._rows64(inputs, rows, lo, lo + step)), "Model")
                yield out[j].detach().double()
                del out

        return [Reference(a.detach(), None, self.budget, pieces=pieces(j)) for j, a in enumerate(r)]

    def _rows64(self, inputs: list[Any], rows: int, lo: int, hi: int) -> list[Any]:
        """Batch rows [lo, hi) of the inputs, in fp64 on the judge's device (other arguments as they are)."""
        return to_device([a[lo:hi] if isinstance(a, torch.Tensor) and a.dim() and a.shape[0] == rows else a
                          for a in inputs], self.device, double=True)

    def _separable(self, model64: Any, inputs: list[Any], rows: int) -> bool:
        """Row b of each output depends on row b of the inputs alone: the fp64 forward of the first
        2m rows agrees with those of rows [0, m) and [m, 2m) run apart (m <= 4; decided once).
        Catches a batch statistic (training-mode BatchNorm, a mean over the batch, a loss) and a
        dependence on one row (x / x[0].sum()): the second half lacks that row."""
        if self._separable_seen is None:
            m = min(4, rows // 2)
            ok = m >= 1
            if ok:
                both = as_outputs(_forward64(model64, self._rows64(inputs, rows, 0, 2 * m)), "Model")
                first = as_outputs(_forward64(model64, self._rows64(inputs, rows, 0, m)), "Model")
                second = as_outputs(_forward64(model64, self._rows64(inputs, rows, m, 2 * m)), "Model")
                for w, a, b in zip(both, first, second, strict=True):
                    apart = torch.cat([a.double(), b.double()])
                    w = w.double()
                    scale = float(w.abs().max()) if w.numel() else 0.0
                    if w.shape != apart.shape or not torch.allclose(w, apart, rtol=1e-9, atol=1e-12 * scale):
                        ok = False
            self._separable_seen = ok
        return bool(self._separable_seen)

    def _budget(self, start: P.JudgeStart) -> Budget:
        """Fair or strict by the evidence about the candidate's code (skills/evaluator/harness/compare.py);
        on CUDA a tf32 problem's reference runs on TF32 tensor cores, elsewhere TF32 is budgeted."""
        loaded = self.loaded
        return budget_for(start.evidence.checked, start.evidence.formats, self.precision,
                          reference_tf32=self.device.type == "cuda",
                          reduction_length=lambda: reduction_length(lambda: loaded.Model(*loaded.get_init_inputs()),
                                                                    loaded.get_inputs))

    def build(self) -> P.JudgeReady:
        """Draw the regular input sets, compute references, write the weights for the candidate."""
        parts = self.start_parts
        with parts("weights"):
            self._write_init("init.pt", self.init_inputs, self.state)
        for k in range(self.start.n_sets):
            # Factory calls in get_inputs() land on the device: drawing 64M normals there takes
            # milliseconds instead of the CPU's seconds (same distributions, different stream).
            with parts("draw"):
                dev_inputs = self._draw(k)
            with parts("references"):
                refs = self._references(self.model, self.model64, dev_inputs, random_check=k == 0)
            with parts("degeneracy"):
                self.samples.append([_sample(ref, self._sample_at(i, ref)) for i, ref in enumerate(refs)])
            if k < self.hold:
                self.sets.append(dev_inputs)
                self.refs.append(refs)
            del refs, dev_inputs
        with parts("degeneracy"):
            self._refuse_degenerate()
        if self.start.shape_check:
            with parts("shape set"):
                self._shape_set()
        if self.device.type == "cuda":
            # Hand back what the allocator cached while sets were drawn and referenced (streamed
            # sets' references included): the candidate's cap is sized from what is free now, and
            # the reserve is what the judge will take again. Kept cached, a 1.6G-element Swish's
            # candidate was capped below its own two tensors (OOM at 6.6 GiB with 42.6 GiB free).
            torch.cuda.empty_cache()
        props = torch.cuda.get_device_properties(self.device) if self.device.type == "cuda" else None
        return P.JudgeReady(
            nonce=self.start.nonce, name=self.loaded.problem.name, problem_id=self.loaded.problem.id,
            precision=self.precision, n_outputs=len(self.refs[0]),
            gpu=props.name if props else None, torch_version=str(torch.__version__),
            l2_bytes=int(props.L2_cache_size) if props else 0, read_bytes=self._read_bytes(),
            shape_sizes=cast(Literal["small", "check"] | None, self.shape_sizes), shape_init=self.shape_own_model,
            input_shapes=[list(a.shape) for a in self.sets[0] if isinstance(a, torch.Tensor)] if self.sets else [],
            seconds=parts.seconds, reserve_bytes=self._reserve_bytes(),
        )

    def _reserve_bytes(self) -> int:
        """What a timed call the judge checks allocates beyond what it holds now: the call's own
        set and its fp64 copy (3x the set's bytes), per output element r, r64 and the fp64 forward's
        intermediates taken as much again as r64 (20 bytes), and the comparison's per-CHUNK passes."""
        if self.device.type != "cuda" or not self.sets:
            return 0
        ins = sum(a.numel() * a.element_size() for a in self.sets[0] if isinstance(a, torch.Tensor))
        outs = sum(r.r.numel() for r in self.refs[0])
        if self.sliced:  # the set, r and d whole (8 bytes an element), one slice's fp64 forward
            return ins + 8 * outs + SLICE_TERM + 64 * CHUNK
        return 3 * ins + 20 * outs + 64 * CHUNK

    def _shape_set(self) -> None:
        """Row 14 of EXPLOITS.md: one more set at other sizes (the problem's SMALL_SIZES under the
        default ones, CHECK_SIZES under the small ones), for correctness only: a kernel that
        hard-codes the timed shape fails it. Its model's weights go to init_shape.pt when its
        init inputs differ."""
        sizes = shape_check_sizes(self.loaded)
        if sizes is None:
            return
        shape = load_problem(self.start.problem_path, sizes=sizes)
        init_inputs = list(shape.get_init_inputs())
        own = not _same_value(init_inputs, self.init_inputs)
        model, model64 = self.model, self.model64
        if own:
            set_seed(self.start.seed, P.SHAPE_INIT_SEED)
            model, model64, state = self._models(shape, init_inputs)
            self._write_init("init_shape.pt", init_inputs, state)
        self.shape_inputs = draw_inputs(shape.get_inputs, P.derive_seed(self.start.seed, P.SHAPE_SET_SEED), self.device)
        self.shape_refs = self._references(model, model64, self.shape_inputs)
        self.shape_sizes = sizes
        self.shape_own_model = own

    def _read_bytes(self) -> int:
        tensors = [a for a in self.sets[0] if isinstance(a, torch.Tensor)] if self.sets else []
        tensors += [t for t in self.state.values() if isinstance(t, torch.Tensor)]
        return sum(t.numel() * t.element_size() for t in tensors)

    def _sample_at(self, i: int, ref: Reference) -> torch.Tensor | None:
        """Output i's sampled flat indices (None: all of its elements), drawn once from the seed."""
        if i not in self._sample_idx:
            n = ref.r.numel()
            g = torch.Generator(device=self.device).manual_seed(P.derive_seed(self.start.seed, SAMPLE_SEED + i))
            self._sample_idx[i] = (None if n <= SAMPLE else
                                   torch.randint(0, n, (SAMPLE,), generator=g, device=self.device))
        return self._sample_idx[i]

    def _refuse_degenerate(self) -> None:
        """Rows 12-13 of EXPLOITS.md: a problem whose output ignores its inputs or is ~0 is refused
        (decided on each output's sampled elements: all of them up to SAMPLE)."""
        for i in range(len(self.samples[0])):
            peak = max(_peak(refs[i]) for refs in self.samples)
            if peak < 1e-6:
                raise ProblemRefused(f"output {i} is tiny (max |value| {peak:.3g}): any answer near 0 would pass")
            # Near-constant, not only bit-equal: if set 0's answer or the sets' mean (a cheat's
            # estimate of the expectation), returned for every set, passes, a constant scores (row 13).
            if self.start.n_sets < 2:
                continue
            constant = self._constant_passes(i) or self._mean_passes(i)
            if self.budget != STRICT and constant:
                # The fair budget's room (long reductions: 8 u32 sqrt(n)) exceeds what tells the
                # sets apart (a 128M-term mean varies by ~1e-4): such an output can only be graded
                # on torch's own rounding, so the whole evaluation falls back to the strict budget.
                self.budget = STRICT
                self.refs = [[r.with_budget(STRICT) for r in refs] for refs in self.refs]
                self.samples = [[r.with_budget(STRICT) for r in refs] for refs in self.samples]
                constant = self._constant_passes(i) or self._mean_passes(i)
            if constant:
                raise ProblemRefused(f"output {i} is (nearly) the same for different inputs: it does not depend"
                                     " on them enough to grade (one set's answer, or the sets' mean, returned for every set passes)")

    def _refuse_random(self, model: Any, inputs: list[Any], r: list[Any]) -> None:
        """A problem whose forward draws random numbers (`torch.randn` for a missing state, dropout
        in training mode) has no one right answer for its inputs: its Model run again from another
        RNG state than `r`'s disagrees with `r` by far more than any nondeterministic kernel's
        reordering (RANDOM_RTOL of the output's RMS; atomics differ by ~1e-7 of it), and it is
        refused (KernelBench's level3/35_LSTM draws h0 and c0 in forward). The candidate's RNG is
        its own, so no seed could make its draws the judge's."""
        set_seed(self.start.seed, RANDOM_SEED)
        again = as_outputs(model(*inputs), "Model")
        for i, (a, b) in enumerate(zip(r, again, strict=True)):
            if not isinstance(a, torch.Tensor) or not a.is_floating_point() or a.shape != b.shape or not a.numel():
                continue
            rms = worst = 0.0
            fa, fb = a.reshape(-1), b.reshape(-1)
            for lo in range(0, fa.numel(), CHUNK):
                x, y = fa[lo:lo + CHUNK].double(), fb[lo:lo + CHUNK].double()
                both = torch.isfinite(x) & torch.isfinite(y)
                rms += float(torch.where(both, x, 0.0).square().sum())
                worst = max(worst, float(torch.where(both, (x - y).abs(), 0.0).max()))
            rms = math.sqrt(rms / fa.numel())
            if worst > RANDOM_RTOL * rms:
                raise ProblemRefused(f"output {i} differs between two runs of the Model on the same inputs (by up to"
                                     f" {worst:.3g}, RMS {rms:.3g}): its forward draws random numbers (torch.randn,"
                                     " dropout in training mode), so no answer can be checked against it")
        del again

    def _constant_passes(self, i: int) -> bool:
        """Set 0's output i, returned for every other set, passes their comparisons."""
        return all(compare_output(i, self.samples[0][i].r, self.samples[k][i]).ok for k in range(1, self.start.n_sets))

    def _mean_passes(self, i: int) -> bool:
        """The sets' mean output i (a cheat's estimate of the expectation, closer than any one set's
        answer), returned for every set, passes them all."""
        if not self.samples[0][i].r.is_floating_point():
            return False
        mean = torch.stack([refs[i].r.double() for refs in self.samples]).mean(0).to(self.samples[0][i].r.dtype)
        return all(compare_output(i, mean, refs[i]).ok for refs in self.samples)

    def _draw(self, k: int) -> list[Any]:
        """Input set k on the judge's device."""
        return draw_inputs(self.loaded.get_inputs, P.derive_seed(self.start.seed, k), self.device)

    # ---- the candidate's calls (over the link) ----

    def check(self, req: P.CheckRequest, link: P.Link) -> P.CheckReport:
        """Correctness: each set handed over and called once (under the op recorder), its outputs
        compared whole. The shape check's set goes first, before the big sets' arena exists: a
        kernel that hard-codes a larger shape then faults instead of writing into other memory."""
        self.parts = Parts()
        self.driver = drv = Driver(link, self.device, req.timing)
        drv.within(req.limit_s, req.own_limit_s)
        # the candidate's threads between its calls, read from /proc: only a late stage asks (_late_blame)
        own = _OwnCpu(TreeClock.open(req.candidate_pid, req.candidate_root_pid), req.candidate_pid)
        flags: list[Flag] = []
        results: dict[int, SetResult] = {}
        n = self.start.n_sets
        with contextlib.closing(own), _late_blame(own, "correctness"):
            if self.shape_refs:
                with self.parts("hand-over"):
                    drv.offer(1, self.shape_inputs, [r.r for r in self.shape_refs], model=int(self.shape_own_model))
                results[n] = self._check_one(drv, 1, self.shape_inputs, self.shape_refs, n, flags, own)
                results[n].sizes = self.shape_sizes
            with self.parts("hand-over"):
                drv.offer(0, self.sets[0], [r.r for r in self.refs[0]])
            for k in range(self.start.n_sets):
                if k < len(self.sets):
                    results[k] = self._check_one(drv, 0, self.sets[k], self.refs[k], k, flags, own)
                    continue
                with self.parts("streamed sets"):  # drawn again (same seed), referenced, checked, freed
                    inputs = self._draw(k)
                    refs = self._references(self.model, self.model64, inputs)
                results[k] = self._check_one(drv, 0, inputs, refs, k, flags, own)
                del inputs, refs
        self.parts.seconds["waiting for the candidate"] = drv.waited_ns / 1e9
        return P.CheckReport(nonce=self.start.nonce, sets=[results[k] for k in sorted(results)], flags=dedupe_flags(flags),
                             seconds=self.parts.seconds)

    def _check_one(self, drv: Driver, group: int, inputs: list[Any], refs: list[Reference], k: int,
                   flags: list[Flag], own: _OwnCpu) -> SetResult:
        with self.parts("hand-over"):
            drv.put(group, inputs)
        with self.parts("calls"):
            own.before()
            called, _, _ = drv.call(group, inputs, watch="ops", stage="correctness")
            own.after()
        flags += called.flags
        with self.parts("compare"):
            errs = drv.check(group, called, inputs, refs, k, f"(input set {k})", flags)
        return SetResult(set_index=k, ok=all(e.ok for e in errs), outputs=errs)

    def time_round(self, req: P.TimeRequest) -> P.TimeReport:
        """One timed loop: warm-up over the regular sets, then timed calls each on an input set drawn
        for it alone (never seen, never repeated: a cache keyed on content never hits), a secret
        subset of them checked whole; then caller calls, probes and the profiler."""
        drv = self.driver
        assert drv is not None, "timing before correctness"
        drv.within(req.limit_s, req.own_limit_s)
        parts = Parts()
        rng = random.Random(P.derive_seed(self.start.seed, TIMED_SEEDS + req.round))
        # The warm-up and the first draw are the judge's own work too: a judge late there is blamed
        # on the candidate's threads' CPU between the warm-up calls, read apart from the timed loop's
        # (whose per-call reads the clock check uses). A spinner started at the first correctness call
        # escaped to an unscored round when the limit fell here (on a loaded 2-core box, 2026-12-07).
        warm = _OwnCpu(TreeClock.open(req.candidate_pid, req.candidate_root_pid), req.candidate_pid)
        with contextlib.closing(warm), _late_blame(warm):
            with parts("warm-up"):
                mean, per_call = self._warm_up(drv, req.timing, warm)
            began = now_ns()
            first = [self._draw(TIMED_SEEDS + req.round * CALLS_PER_ROUND)]
            draw_us = (now_ns() - began) / 1e3
        # The candidate's threads, read from outside around each call (skills/evaluator/schedstat.py): two
        # reads a call, which the loop's wall budget counts (slower under a virtualised /proc).
        clock = TreeClock.open(req.candidate_pid, req.candidate_root_pid)
        began = now_ns()
        own = _OwnCpu(clock, req.candidate_pid)
        read_us = (now_ns() - began) / 1e3 if clock is not None else 0.0
        mine = OwnWait()  # the judge's own wait for a CPU around each call (its wake-up by the answer)
        judge_waited: list[int] | None = []
        n = min(calls_for(req.timing, mean), within_budget(req.timing, per_call + draw_us + 2 * read_us))
        checked = loop_plan(n, req.checked_fraction, rng)
        events: list[float] = []
        walls: list[float] = []
        leads: list[float] = []
        sent_ns: list[int] = []
        back_ns: list[int] = []
        flags: list[Flag] = []
        bad = 0
        first_seq = drv.seq + 1
        spent = {"draw": 0, "hand-over": 0, "call": 0, "check": 0}
        with parts("timed loop"), _late_blame(own):
            for i in range(n):
                t0 = now_ns()
                # one drawn set at a time (the memory plan counts one): the first goes with its call
                inputs = first.pop() if first else self._draw(TIMED_SEEDS + req.round * CALLS_PER_ROUND + i)
                t1 = now_ns()
                drv.put(0, inputs)
                t2 = now_ns()
                own.before()
                w0 = mine.read()
                called, sent, back = drv.call(0, inputs)
                t3 = now_ns()
                w1 = mine.read()
                own.after()
                if w0 is None or w1 is None:
                    judge_waited = None
                elif judge_waited is not None:
                    judge_waited.append(max(0, w1 - w0))
                spent["draw"] += t1 - t0
                spent["hand-over"] += t2 - t1
                spent["call"] += t3 - t2
                events.append(called.event_us)
                walls.append(min(called.wall_us, (back - sent) / 1e3))
                leads.append(called.lead_us)
                sent_ns.append(sent)
                back_ns.append(back)
                flags += called.flags
                if i in checked:
                    refs = self._references(self.model, self.model64, inputs)
                    bad += not self._passes(drv, called, inputs, refs, i, flags)
                    del refs
                    spent["check"] += now_ns() - t3
                del inputs
        del first
        own.close()
        mine.close()
        for k, v in spent.items():
            parts.seconds[f"timed loop: {k}"] = v / 1e9
        samples = P.Samples(per_call_us=events, wall_us=walls, sync_overhead_us=0.0,
                            lead_us=leads if self.device.type == "cuda" and req.timing.lead_us > 0 else [])
        # a judge late after the loop is blamed on the loop's evidence: a spinner between the timed
        # calls must not escape by the limit falling on the probes' comparisons instead of a check
        with parts("after the loop"), _late_blame(own):
            bad += self._after_loop(drv, req, samples, flags)
        parts.seconds["waiting for the candidate"] = drv.waited_ns / 1e9
        return P.TimeReport(nonce=self.start.nonce, samples=samples, first_seq=first_seq,
                            checked_calls=len(checked), bad_calls=bad, sent_ns=sent_ns, back_ns=back_ns,
                            flags=dedupe_flags(flags), seconds=parts.seconds, threads=own.report(),
                            judge_waited_ns=judge_waited or [])

    def _warm_up(self, drv: Driver, timing: P.TimingConfig, own: _OwnCpu) -> tuple[float, float]:
        """Untimed calls like the timed ones, until warmup_calls and warmup_seconds (at most 10x
        the calls); the mean wall us of the later half (bounded by the judge's own clock), and
        the judge's wall us per call there (hand-over and hops included). `own` reads the
        candidate's threads around each call (their CPU between calls blames a late judge)."""
        walls: list[float] = []
        rounds: list[float] = []
        began = now_ns()
        i = 0
        while i < timing.warmup_calls or (now_ns() - began) / 1e9 < timing.warmup_seconds:
            inputs = self.sets[i % len(self.sets)]
            t0 = now_ns()
            drv.put(0, inputs)
            own.before()
            called, sent, back = drv.call(0, inputs)
            own.after()
            rounds.append((now_ns() - t0) / 1e3)
            walls.append(min(max(called.wall_us, 0.0), (back - sent) / 1e3))
            i += 1
            if i >= 10 * timing.warmup_calls:
                break
        return warm_mean(walls), warm_mean(rounds)

    def _after_loop(self, drv: Driver, req: P.TimeRequest, samples: P.Samples, flags: list[Flag]) -> int:
        """After the timed calls: caller calls (cuda, no lead), three probe calls under the op recorder
        (and on cpu one under the profiler), the profiler's launch accounting, the sync's own cost.
        Their outputs are checked too; returns how many were wrong."""
        bad = 0
        n_sets = len(self.sets)
        if self.device.type == "cuda":
            for j in range(req.timing.caller_calls):
                drv.put(0, self.sets[j % n_sets])
                called, _, _ = drv.call(0, self.sets[j % n_sets], lead=False)
                samples.caller_us.append(called.event_us)
        watches = ["ops", "ops", "ops"] + (["profiler"] if self.device.type == "cpu" else [])
        for j, watch in enumerate(watches):
            inputs, refs = self.sets[j % n_sets], self.refs[j % n_sets]
            drv.put(0, inputs)
            called, _, _ = drv.call(0, inputs, watch=watch)
            flags += called.flags
            bad += not self._passes(drv, called, inputs, refs, -1, flags)
        if self.device.type == "cuda":
            if req.profile_calls:
                drv.put(0, self.sets[0])
                prof = drv.profile(req.profile_calls)
                samples.kernel_us = prof.kernel_us
                flags += prof.flags
            samples.sync_overhead_us = drv.overhead(self.sets)
        return bad

    def _passes(self, drv: Driver, called: P.Called, inputs: list[Any], refs: list[Reference], i: int,
                flags: list[Flag]) -> bool:
        return all(e.ok for e in drv.check(0, called, inputs, refs, i, "during the timed calls", flags))

    def yardstick(self, req: P.YardstickRequest) -> P.YardstickReport:
        assert self.driver is not None
        if self.echo is None:
            self.echo = Echo()
        return P.YardstickReport(nonce=self.start.nonce, handback_us=self.driver.handback_times(self.refs[0], req.calls),
                                 hop_us=self.echo.hops(req.calls))

    def baselines(self, req: P.BaselineRequest) -> P.BaselineReport:
        eager = compiled = None
        eager_bytes = compile_bytes = None
        error = None
        with torch.no_grad():
            if "eager" in req.which:
                eager, eager_bytes = self._time(self.model, req.timing)
            if "compile" in req.which:
                try:
                    if self.compiled is None:  # compiled once: later paired rounds reuse it
                        self.compiled = torch.compile(self.model)
                    compiled, compile_bytes = self._time(self.compiled, req.timing)
                except Exception as exc:  # torch.compile failing is a fact about the problem, reported
                    error = f"{type(exc).__name__}: {exc}"[:2000]
        if self.device.type == "cuda":
            # The memory plan counts a baseline's loop and a checked timed call apart, never together:
            # the baseline's cached blocks go back, so the next timed round's set and references
            # come from free memory the candidate's cap left for them, not from beside a stale cache.
            torch.cuda.empty_cache()
        return P.BaselineReport(nonce=self.start.nonce, eager=eager, compile=compiled, compile_error=error,
                                eager_bytes=eager_bytes, compile_bytes=compile_bytes)

    def _time(self, fn: Callable[..., Any], timing: P.TimingConfig) -> tuple[P.Samples, int | None]:
        """The timed loop's samples, and the callable's footprint over it (its peak beyond what was
        held before the loop, plus the model's weights: skills/evaluator/harness/peak.py)."""
        loop = Loop(fn, self.sets, self.device, timing)
        mean = loop.warmup(P.rotation(len(self.sets), 3 * len(self.sets)))
        peak = Peak(self.device)
        peak.start()
        samples = loop.run(P.rotation(len(self.sets), loop.n_calls(mean)))
        took = peak.stop()
        return samples, took + model_bytes(self.model) if took is not None else None


def wait_preinit(chan: P.Channel) -> None:
    """Say the imports are done; then wait until the parent says to bring CUDA up (a warm pool
    holds it back while a timed loop runs)."""
    chan.send(P.Started())
    while not isinstance(chan.recv(), P.Preinit):
        pass


def preinit() -> None:
    """Bring CUDA up while waiting for the job (a warm pool starts workers ahead of time), and
    torch's meta-tensor path that loading a problem, its memory plan and its reduction length run
    on (its first use cost 0.5 s of every evaluation's start on the H200)."""
    with torch.device("meta"), torch.no_grad():
        x = torch.randn(4, 4)
        torch.nn.functional.linear(torch.sigmoid(x) * x, x).sum(1)
        torch.rand(2), torch.randint(0, 3, (2,))
    if os.environ.get("KAGENT_PREINIT") == "cuda" and torch.cuda.is_available():
        torch.cuda.init()  # type: ignore[no-untyped-call]
        torch.empty(1, device="cuda")


class ProblemRefused(Exception):
    """The problem cannot be graded fairly (degenerate output)."""


STAGE_OF: dict[type, str] = {P.CheckRequest: "correctness", P.TimeRequest: "timing", P.YardstickRequest: "timing",
                             P.BaselineRequest: "baseline"}


def _serve(judge: Judge, msg: P.Message, chan: P.Channel, link: P.Link | None) -> None:
    """Answer one request of the parent."""
    if isinstance(msg, P.CheckRequest):
        if link is None:
            raise RuntimeError("the judge was started without its link to the candidate")
        chan.send(judge.check(msg, link))
    elif isinstance(msg, P.TimeRequest):
        chan.send(judge.time_round(msg))
    elif isinstance(msg, P.YardstickRequest):
        chan.send(judge.yardstick(msg))
    elif isinstance(msg, P.BaselineRequest):
        chan.send(judge.baselines(msg))


def main() -> None:
    os.umask(0o022)  # the candidate (another uid) must read the weights the judge writes
    pin_self(os.environ.get("KAGENT_CPUS"))
    chan = P.take_over_stdio()
    link = P.Link.inherited()
    wait_preinit(chan)
    preinit()
    chan.send(P.Warm())
    start = chan.recv()
    assert isinstance(start, P.JudgeStart)
    stage = "load"
    try:
        judge = Judge(start)
        stage = "reference"
        chan.send(judge.build())
        while True:
            try:
                msg = chan.recv()
            except EOFError:
                return
            if getattr(msg, "nonce", None) != start.nonce:
                continue
            stage = STAGE_OF.get(type(msg), stage)
            try:
                _serve(judge, msg, chan, link)
            except CandidateFault as exc:
                chan.send(P.WorkerError(nonce=start.nonce, stage=exc.stage, message=str(exc), flag=exc.flag, candidate=True,
                                        gone=exc.gone))
    except (ProblemRefused, BudgetUndefined) as exc:
        chan.send(P.WorkerError(nonce=start.nonce, stage="problem", message=f"problem refused: {exc}"))
    except ProblemError as exc:
        chan.send(P.WorkerError(nonce=start.nonce, stage="problem", message=f"problem cannot be loaded: {exc}"))
    except JudgeLate as exc:  # the environment's fault, worded in full (no traceback)
        chan.send(P.WorkerError(nonce=start.nonce, stage=stage, message=str(exc)))
    except Exception as exc:  # reported to the parent, which turns it into a structured failure
        tb = traceback.format_exc(limit=8)
        chan.send(P.WorkerError(nonce=start.nonce, stage=stage, message=f"{type(exc).__name__}: {exc}\n{tb}"[-4000:]))
    finally:
        os.close(chan.write_fd)


if __name__ == "__main__":
    main()
