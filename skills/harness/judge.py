"""The judge worker: trusted, never imports candidate code.

It loads the problem, draws the input sets from seeds derived from the secret seed, computes the
reference outputs (under the precision policy, and in fp64), writes only the initial weights where
the candidate can read them (the candidate draws the same inputs from the sets' seeds: see
skills/harness/exchange.py), compares the candidate's outputs, and times the baselines.

Run as `python -m skills.harness.judge` with the protocol on stdin/stdout.
"""

from __future__ import annotations

import copy
import os
import random
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, cast

import torch

from skills.affinity import pin_self
from skills.harness import protocol as P
from skills.harness.compare import (
    STRICT,
    Budget,
    BudgetUndefined,
    Reference,
    budget_for,
    compare_output,
    reduction_length,
)
from skills.harness.exchange import (
    OutputUnreadable,
    draw_inputs,
    fingerprint,
    meta_tensor,
    read_output,
    to_device,
)
from skills.harness.memory import too_big
from skills.harness.timing import Loop, Parts
from skills.problem import LoadedProblem, ProblemError, Sizes, load_problem, shape_check_sizes
from skills.results import OutputError, SetResult


def set_precision(precision: str) -> None:
    """TF32 only where the policy allows it; the reference and baselines obey the same policy."""
    allow = precision == "tf32"
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


def set_seed(seed: int, index: int) -> None:
    torch.manual_seed(P.derive_seed(seed, index))


class Judge:
    def __init__(self, start: P.JudgeStart) -> None:
        self.start = start
        self.device = torch.device(start.device)
        self.loaded = load_problem(start.problem_path, sizes=start.sizes)
        # Before anything is allocated: a problem too big for this machine is refused in seconds.
        why = too_big(self.loaded, start.n_sets + min(start.n_canaries, 1) + int(start.shape_check), self.device)
        if why is not None:
            raise ProblemRefused(why)
        self.precision = self.loaded.problem.precision
        set_precision(self.precision)
        set_seed(start.seed, -1)
        self.init_inputs = list(self.loaded.get_init_inputs())
        self.model, self.model64, self.state = self._models(self.loaded, self.init_inputs)
        self.budget = self._budget(start)
        self.exchange = Path(start.exchange_dir)
        self.refs: list[list[Reference]] = []
        self.compiled: Any = None
        self.sets: list[list[Any]] = []
        self.shape_refs: list[Reference] = []
        self.shape_sizes: Sizes | None = None
        self.parts = Parts()

    def _models(self, loaded: LoadedProblem, init_inputs: list[Any]) -> tuple[Any, Any, dict[str, Any]]:
        """Model(*init_inputs), initialised from torch's generator as the caller seeded it: on the
        device, its fp64 copy, and its initial state dict (what the candidate loads)."""
        model = loaded.Model(*init_inputs)
        state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        model = model.to(self.device)
        return model, copy.deepcopy(model).double(), state

    def _write_init(self, name: str, init_inputs: list[Any], state: dict[str, Any]) -> None:
        torch.save({"init_inputs": init_inputs, "state_dict": state}, self.exchange / name)

    def _references(self, model: Any, model64: Any, inputs: list[Any]) -> list[Reference]:
        """The outputs under the precision policy and in fp64."""
        with torch.no_grad():
            r = as_outputs(model(*inputs), "Model")
            r64 = as_outputs(model64(*to_device(inputs, self.device, double=True)), "Model")
        return [Reference(a.detach(), b.detach().double(), self.budget) for a, b in zip(r, r64, strict=True)]

    def _budget(self, start: P.JudgeStart) -> Budget:
        """Fair or strict by the evidence about the candidate's code (skills/harness/compare.py);
        on CUDA a tf32 problem's reference runs on TF32 tensor cores, elsewhere TF32 is budgeted."""
        loaded = self.loaded
        return budget_for(start.evidence.checked, start.evidence.formats, self.precision,
                          reference_tf32=self.device.type == "cuda",
                          reduction_length=lambda: reduction_length(lambda: loaded.Model(*loaded.get_init_inputs()),
                                                                    loaded.get_inputs))

    def build(self) -> P.JudgeReady:
        """Draw every input set, compute references, write the weights for the candidate."""
        self._write_init("init.pt", self.init_inputs, self.state)
        prints: list[list[float]] = []
        for k in range(self.start.n_sets):
            # Factory calls in get_inputs() land on the device: drawing 64M normals there takes
            # milliseconds instead of the CPU's seconds (same distributions, different stream).
            dev_inputs = self._draw(k, prints)
            self.refs.append(self._references(self.model, self.model64, dev_inputs))
            self.sets.append(dev_inputs)
        self._refuse_degenerate()
        positions = self._sample_positions()
        samples = [self._sample_refs(k, refs, positions) for k, refs in enumerate(self.refs)]
        # Canaries (a few per paired round) are needed only at the sample positions: one at a
        # time is resident, so their number does not raise the judge's peak memory.
        for k in range(self.start.n_sets, self.start.n_sets + self.start.n_canaries):
            refs = self._references(self.model, self.model64, self._draw(k, prints))
            samples.append(self._sample_refs(k, refs, positions))
            del refs
        shape_print, shape_init = self._shape_set() if self.start.shape_check else ([], False)
        props = torch.cuda.get_device_properties(self.device) if self.device.type == "cuda" else None
        return P.JudgeReady(
            nonce=self.start.nonce, name=self.loaded.problem.name, problem_id=self.loaded.problem.id,
            precision=self.precision, n_outputs=len(self.refs[0]), sample_positions=positions,
            samples=samples, gpu=props.name if props else None, torch_version=str(torch.__version__),
            l2_bytes=int(props.L2_cache_size) if props else 0, read_bytes=self._read_bytes(),
            fingerprints=prints, shape_sizes=cast(Literal["small", "check"] | None, self.shape_sizes),
            shape_fingerprint=shape_print, shape_init=shape_init,
            input_shapes=[list(a.shape) for a in self.sets[0] if isinstance(a, torch.Tensor)] if self.sets else [],
        )

    def _shape_set(self) -> tuple[list[float], bool]:
        """Row 14 of EXPLOITS.md: one more set at other sizes (the problem's SMALL_SIZES under the
        default ones, CHECK_SIZES under the small ones), for correctness only: a kernel that
        hard-codes the timed shape fails it. Returns (its fingerprint, whether its model has init
        inputs of its own, whose weights then go to init_shape.pt)."""
        sizes = shape_check_sizes(self.loaded)
        if sizes is None:
            return [], False
        shape = load_problem(self.start.problem_path, sizes=sizes)
        init_inputs = list(shape.get_init_inputs())
        own = not _same_value(init_inputs, self.init_inputs)
        model, model64 = self.model, self.model64
        if own:
            set_seed(self.start.seed, P.SHAPE_INIT_SEED)
            model, model64, state = self._models(shape, init_inputs)
            self._write_init("init_shape.pt", init_inputs, state)
        inputs = draw_inputs(shape.get_inputs, P.derive_seed(self.start.seed, P.SHAPE_SET_SEED), self.device)
        self.shape_refs = self._references(model, model64, inputs)
        self.shape_sizes = sizes
        return fingerprint(inputs), own

    def _read_bytes(self) -> int:
        tensors = [a for a in self.sets[0] if isinstance(a, torch.Tensor)] if self.sets else []
        tensors += [t for t in self.state.values() if isinstance(t, torch.Tensor)]
        return sum(t.numel() * t.element_size() for t in tensors)

    def _refuse_degenerate(self) -> None:
        """Rows 12-13 of EXPLOITS.md: a problem whose output ignores its inputs or is ~0 is refused."""
        for i in range(len(self.refs[0])):
            peak = max(float(refs[i].r64.abs().nan_to_num(0.0).max()) if refs[i].r64.numel() else 0.0
                       for refs in self.refs)
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
                self.refs = [[Reference(r.r, r.r64, STRICT) for r in refs] for refs in self.refs]
                constant = self._constant_passes(i) or self._mean_passes(i)
            if constant:
                raise ProblemRefused(f"output {i} is (nearly) the same for different inputs: it does not depend"
                                     " on them enough to grade (one set's answer, or the sets' mean, returned for every set passes)")

    def _constant_passes(self, i: int) -> bool:
        """Set 0's output i, returned for every other set, passes their comparisons."""
        return all(compare_output(i, self.refs[0][i].r, self.refs[k][i]).ok for k in range(1, self.start.n_sets))

    def _mean_passes(self, i: int) -> bool:
        """The sets' mean output i (a cheat's estimate of the expectation, closer than any one set's
        answer), returned for every set, passes them all."""
        if not self.refs[0][i].r.is_floating_point():
            return False
        mean = torch.stack([refs[i].r.double() for refs in self.refs]).mean(0).to(self.refs[0][i].r.dtype)
        return all(compare_output(i, mean, refs[i]).ok for refs in self.refs)

    def _sample_positions(self) -> list[list[int]]:
        rng = random.Random(self.start.seed ^ 0x5EED)
        out = []
        for ref in self.refs[0]:
            n = ref.r.numel()
            k = min(self.start.samples_per_output, n)
            out.append(sorted(rng.sample(range(n), k)))
        return out

    def _draw(self, k: int, prints: list[list[float]]) -> list[Any]:
        """Input set k on the judge's device; its checksum appended to `prints`."""
        inputs = draw_inputs(self.loaded.get_inputs, P.derive_seed(self.start.seed, k), self.device)
        prints.append(fingerprint(inputs))
        return inputs

    def _sample_refs(self, k: int, refs: list[Reference], positions: list[list[int]]) -> P.SampleRefs:
        values, budgets = [], []
        for ref, pos in zip(refs, positions, strict=True):
            idx = torch.tensor(pos, dtype=torch.long, device=ref.r64.device)
            values.append(ref.r64.reshape(-1)[idx].tolist())
            budgets.append(ref.budget.reshape(-1)[idx].tolist())
        return P.SampleRefs(set_index=k, values=values, budgets=budgets)

    def compare(self, req: P.CompareRequest) -> P.CompareReport:
        sets = []
        self.parts = Parts()
        for k, refs in enumerate(self.refs + ([self.shape_refs] if self.shape_refs else [])):
            got = req.outputs[k] if k < len(req.outputs) else []
            errs: list[OutputError] = []
            for i, ref in enumerate(refs):
                if i < len(got):
                    errs.append(self._compare_one(req.out_dir, k, i, got[i], ref))
                else:
                    errs.append(OutputError(index=i, ok=False, shape=[], dtype="missing", max_abs_err=None,
                                            max_rel_err=None, err_ratio=None, bad_elements=ref.r.numel(),
                                            message=f"output {i} missing: the model returned {len(got)} outputs, expected {len(refs)}"))
            sets.append(SetResult(set_index=k, ok=all(e.ok for e in errs), outputs=errs,
                                  sizes=self.shape_sizes if k >= len(self.refs) else None))
        return P.CompareReport(nonce=self.start.nonce, sets=sets, seconds=self.parts.seconds)

    def _compare_one(self, out_dir: str, k: int, i: int, meta: P.OutputFile, ref: Reference) -> OutputError:
        """The candidate's output i of set k against its reference; the file is read only when its
        shape and dtype are the reference's (untrusted sizes never decide how much is read)."""
        stand_in = meta_tensor(meta)
        if stand_in is None:
            what = meta.kind if meta.kind != "Tensor" else f"tensor of dtype {meta.dtype or '?'}"
            return compare_output(i, None, ref, kind=what)
        if list(stand_in.shape) != list(ref.r.shape) or stand_in.dtype != ref.r.dtype or not meta.path:
            return compare_output(i, stand_in, ref)
        try:
            with self.parts("read"):
                got = read_output(meta, out_dir, k, i, self.device)
        except OutputUnreadable as exc:
            return OutputError(index=i, ok=False, shape=meta.shape, dtype=meta.dtype, max_abs_err=None,
                               max_rel_err=None, err_ratio=None, bad_elements=ref.r.numel(),
                               message=f"output {i} of set {k}: {exc}")
        with self.parts("compare"):
            return compare_output(i, got, ref)

    def baselines(self, req: P.BaselineRequest) -> P.BaselineReport:
        eager = compiled = None
        error = None
        with torch.no_grad():
            if "eager" in req.which:
                eager = self._time(self.model, req.timing)
            if "compile" in req.which:
                try:
                    if self.compiled is None:  # compiled once: later paired rounds reuse it
                        self.compiled = torch.compile(self.model)
                    compiled = self._time(self.compiled, req.timing)
                except Exception as exc:  # torch.compile failing is a fact about the problem, reported
                    error = f"{type(exc).__name__}: {exc}"[:2000]
        return P.BaselineReport(nonce=self.start.nonce, eager=eager, compile=compiled, compile_error=error)

    def loop_work(self, req: P.PrepareRequest) -> P.PrepareReport:
        """The timing loop's own work between calls, timed on these sets (the loop never calls the model)."""
        loop = Loop(self.model, self.sets, self.device, req.timing)
        outs = [ref.r for ref in self.refs[0]] if self.refs else []
        return P.PrepareReport(nonce=self.start.nonce, prepare_us=loop.prepare_times(req.calls, outs))

    def _time(self, fn: Callable[..., Any], timing: P.TimingConfig) -> P.Samples:
        loop = Loop(fn, self.sets, self.device, timing)
        mean = loop.warmup(P.rotation(len(self.sets), 3 * len(self.sets)))
        return loop.run(P.rotation(len(self.sets), loop.n_calls(mean)))


def wait_preinit(chan: P.Channel) -> None:
    """Say the imports are done; then wait until the parent says to bring CUDA up (a warm pool
    holds it back while a timed loop runs)."""
    chan.send(P.Started())
    while not isinstance(chan.recv(), P.Preinit):
        pass


def preinit() -> None:
    """Bring CUDA up while waiting for the job (a warm pool starts workers ahead of time)."""
    if os.environ.get("KAGENT_PREINIT") == "cuda" and torch.cuda.is_available():
        torch.cuda.init()  # type: ignore[no-untyped-call]
        torch.empty(1, device="cuda")


class ProblemRefused(Exception):
    """The problem cannot be graded fairly (degenerate output)."""


def main() -> None:
    os.umask(0o022)  # the candidate (another uid) must read the weights the judge writes
    pin_self(os.environ.get("KAGENT_CPUS"))
    chan = P.take_over_stdio()
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
            if isinstance(msg, P.CompareRequest):
                stage = "compare"
                chan.send(judge.compare(msg))
            elif isinstance(msg, P.PrepareRequest):
                stage = "prepare"
                chan.send(judge.loop_work(msg))
            elif isinstance(msg, P.BaselineRequest):
                stage = "baseline"
                chan.send(judge.baselines(msg))
    except (ProblemRefused, BudgetUndefined) as exc:
        chan.send(P.WorkerError(nonce=start.nonce, stage="problem", message=f"problem refused: {exc}"))
    except ProblemError as exc:
        chan.send(P.WorkerError(nonce=start.nonce, stage="problem", message=f"problem cannot be loaded: {exc}"))
    except Exception as exc:  # reported to the parent, which turns it into a structured failure
        tb = traceback.format_exc(limit=8)
        chan.send(P.WorkerError(nonce=start.nonce, stage=stage, message=f"{type(exc).__name__}: {exc}\n{tb}"[-4000:]))
    finally:
        os.close(chan.write_fd)


if __name__ == "__main__":
    main()
