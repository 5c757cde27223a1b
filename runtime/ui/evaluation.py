"""One evaluation as HTML: outcome, reward, speedups with their intervals, flags, the timings
with their 95% intervals, stage durations, the build and the per-set correctness."""

from __future__ import annotations

from collections.abc import Sequence

from runtime.store import EvaluationRow
from runtime.ui.html import Safe, el, join, num, pre, seconds, table, when, yes
from skills.evaluator.results import EvalResult, Interval, TimingResult


def interval(iv: Interval | None, unit: str = "µs") -> str:
    if iv is None:
        return "—"
    return f"{num(iv.median, 4)} {unit} [{num(iv.low, 4)}, {num(iv.high, 4)}] (n={iv.n})"


def outcome(r: EvalResult) -> Safe:
    if r.environment_fault:
        return el("span", "environment fault", class_="bad")
    ok = r.compiled and r.correct and not r.flags
    return el("span", "passed" if ok else "failed", class_="ok" if ok else "bad")


def summary_table(rows: list[EvaluationRow]) -> Safe:
    """One line per evaluation, linking to its details below."""
    head = ["evaluation", "mode", "outcome", "stage", "reward", "vs eager", "vs compile", "flags", "took"]
    return table(head, ([
        el("a", ev.id, href=f"#evaluation-{ev.id}"), ev.result.mode, outcome(ev.result), ev.result.stage,
        num(ev.result.reward), speedups_text(ev.result, "eager"), speedups_text(ev.result, "compile"),
        ", ".join(f.name for f in ev.result.flags) or "—", seconds(ev.result.stages.total)]
        for ev in rows), class_="evaluations")


def speedups_text(r: EvalResult, baseline: str) -> str:
    for s in r.speedups:
        if s.baseline == baseline:
            return f"{s.value:.2f}× [{s.low:.2f}, {s.high:.2f}]"
    return "—"


def _timing_rows(r: EvalResult) -> list[list[object]]:
    named: list[tuple[str, TimingResult | None]] = [("candidate", r.candidate), ("eager", r.eager),
                                                    ("torch.compile", r.compiled_baseline)]
    return [[name, interval(t.per_call_us), interval(t.caller_us), num(t.kernel_us, 4), t.calls, num(t.cv, 3),
             num(t.window_us, 4), num(t.between_us, 4)] for name, t in named if t is not None]


def details(ev: EvaluationRow, *, open_: bool = False) -> Safe:
    """The whole evaluation, folded unless `open_`, under an anchor the transcript links to."""
    r = ev.result
    facts = [("outcome", outcome(r)), ("mode", r.mode), ("backend", r.backend), ("stage reached", r.stage),
             ("compiled", yes(r.compiled)), ("correct", yes(r.correct)),
             ("reward", f"{num(r.reward)} ({r.reward_fn or 'no reward function'})"),
             ("precision", r.precision), ("device", r.gpu or "cpu"), ("torch", r.torch_version),
             ("sandbox", r.sandbox or "—"), ("input shapes", "; ".join(map(str, r.input_shapes)) or "—"),
             ("stored", when(ev.created))]
    if r.error:
        facts.append(("error", el("span", r.error, class_="bad")))
    if r.environment_fault:
        facts.append(("environment fault", el("span", r.environment_fault, class_="bad")))
    title = f"evaluation {ev.id} · {r.mode} · reward {num(r.reward)}"
    parts: list[object] = [el("summary", el("b", title), " · ", outcome(r)), dl(facts)]
    if r.flags:
        parts += [el("h4", "flags"), el("ul", *(el("li", el("b", f.name), ": ", f.detail, class_="flag")
                                              for f in r.flags))]
    if r.speedups:
        parts += [el("h4", "speedups"), table(
            ["baseline", "speedup", "95% interval", "faster", "paired rounds"],
            ([s.baseline, f"{s.value:.3f}×", f"[{s.low:.3f}, {s.high:.3f}]", yes(s.faster),
              f"{s.rounds}" + (f" ({', '.join(f'{v:.3f}' for v in s.round_values)})" if s.round_values else "")]
             for s in r.speedups))]
    timing = _timing_rows(r)
    if timing:
        parts += [el("h4", "timing (per call, median [95% interval])"), table(
            ["callable", "judged", "caller", "kernel µs", "calls", "cv", "window µs", "between µs"], timing)]
    st = r.stages
    stages = [("build", st.build), ("workers ready", st.workers_ready), ("correctness", st.correctness),
              ("timing", st.timing), ("baselines", st.baselines), ("total", st.total)]
    parts += [el("h4", "stage durations"), table([name for name, _ in stages], [[seconds(v) for _, v in stages]])]
    if st.parts:
        parts.append(el("details", el("summary", "inside the workers, by part"),
                        table(["part", "seconds"], ([name, seconds(v)] for name, v in sorted(st.parts.items())))))
    if r.build is not None:
        b = r.build
        parts += [el("h4", "build"), dl([("ok", yes(b.ok)), ("cached", yes(b.cached)), ("took", seconds(b.seconds)),
                                         ("flavour", b.flavour)])]
        if b.errors:
            parts.append(pre(b.errors, class_="bad"))
    if r.sets:
        parts += [el("h4", "correctness per input set"), table(
            ["set", "sizes", "ok", "outputs"],
            ([s.set_index, s.sizes or "timed", yes(s.ok),
              join((f"#{o.index} {o.dtype}{o.shape}: max abs err {num(o.max_abs_err)}, rel {num(o.max_rel_err)}"
                    + ("" if o.ok else f" — {o.message}") for o in s.outputs), "; ")] for s in r.sets))]
    if r.log.strip():
        parts += [el("h4", "candidate output"), pre(r.log)]
    return el("details", *parts, class_="eval", id=f"evaluation-{ev.id}", open=open_)


def dl(facts: Sequence[tuple[str, object]]) -> Safe:
    """A definition list of (name, value): the page's facts."""
    return el("dl", *(join([el("dt", k), el("dd", v)]) for k, v in facts), class_="facts")
