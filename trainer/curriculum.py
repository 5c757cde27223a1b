"""Curriculum (DESIGN §10): per-problem running statistics -> sampling weights in the store's
`curriculum` table, which the daemon's scheduler reads (`Store.curriculum_weights()`).

Weights, for every problem of the problem set in the store (not those that came in over HTTP or
through `kagent eval`; the scheduler gives unlisted problems weight 1):
1. Learning signal. With s successes (reward > 0) in the last n graded episodes of a problem
   (n <= window), p = (s + 1) / (n + 2) and signal = 4 p (1 - p): 1 for an unseen problem or
   one solved half the time, near 0 for one always failed or always solved. The weight is
   max(signal, min_weight), so a problem without signal sinks but is never dropped.
2. Tiers. A problem's tier is `problems.tier` (else its level, else 1). A tier's pass rate pools
   the recent episodes of its problems. The frontier is the lowest tier whose pass rate is below
   `advance_at`; tiers up to the frontier are open, the tiers above are locked (weight 0 before
   step 3). As pass rates rise, the frontier moves up a tier.
3. No tier starves. Every tier gets at least `min_tier_share` of the total weight (a locked
   tier's share is spread evenly over its problems); the other tiers share the rest in
   proportion to their weights. Weights are scaled to a mean of 1.

    python -m trainer.curriculum --db kagent.db           # recompute once and print the tiers
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

import anyio
import msgspec

from runtime.store import Conn, CurriculumRow, Store
from runtime.store.training import curriculum_problems, graded_rewards


class CurriculumConfig(msgspec.Struct, kw_only=True, frozen=True):
    """How statistics become weights (trainer.run's --curriculum-* flags)."""

    window: int = 16
    """Recent graded episodes per problem behind its success rate."""
    advance_at: float = 0.6
    """A tier whose recent pass rate reaches this is passed; the next tier opens."""
    min_weight: float = 0.05
    """Floor of an open problem's weight."""
    min_tier_share: float = 0.05
    """Least share of the total weight per tier."""


class ProblemStats(msgspec.Struct, kw_only=True):
    """Running statistics of one problem."""

    problem_id: str
    """Problem."""
    tier: int
    """Curriculum tier."""
    attempts: int = 0
    """Graded episodes, all time."""
    successes: int = 0
    """Of those, with reward > 0."""
    mean_reward: float | None = None
    """Mean reward, all time (None before the first)."""
    recent: list[float] = msgspec.field(default_factory=list)
    """Rewards of the last `window` graded episodes, newest first."""

    @property
    def recent_success(self) -> float | None:
        return sum(r > 0 for r in self.recent) / len(self.recent) if self.recent else None


def gather(conn: Conn, window: int) -> list[ProblemStats]:
    """Statistics of every problem of the problem set from its graded episodes (any origin: a
    request episode says as much about difficulty as a rollout). Problems that arrived over HTTP
    or through `kagent eval` are not in the set the scheduler draws from, so they get no row."""
    stats = {p.id: ProblemStats(problem_id=p.id, tier=int(p.tier if p.tier is not None else p.level or 1))
             for p in curriculum_problems(conn)}
    sums: dict[str, float] = defaultdict(float)
    for pid, reward in graded_rewards(conn):
        s = stats.get(pid)
        if s is None:
            continue
        s.attempts += 1
        s.successes += int(reward > 0)
        sums[pid] += reward
        if len(s.recent) < window:
            s.recent.append(reward)
    for pid, total in sums.items():
        stats[pid].mean_reward = total / stats[pid].attempts
    return list(stats.values())


def tier_pass_rates(stats: list[ProblemStats]) -> dict[int, float | None]:
    """Pooled recent pass rate per tier (None: nothing attempted yet)."""
    wins: dict[int, int] = defaultdict(int)
    seen: dict[int, int] = defaultdict(int)
    for s in stats:
        seen[s.tier] += len(s.recent)
        wins[s.tier] += sum(r > 0 for r in s.recent)
    return {t: (wins[t] / seen[t] if seen[t] else None) for t in sorted({s.tier for s in stats})}


def frontier(rates: dict[int, float | None], advance_at: float) -> int | None:
    """Lowest tier not yet passed (None: every tier passed)."""
    for tier, rate in sorted(rates.items()):
        if rate is None or rate < advance_at:
            return tier
    return None


def signal(s: ProblemStats) -> float:
    n = len(s.recent)
    p = (sum(r > 0 for r in s.recent) + 1) / (n + 2)
    return 4 * p * (1 - p)


def weights(stats: list[ProblemStats], cfg: CurriculumConfig) -> dict[str, float]:
    """Problem id -> sampling weight (mean 1), following the module docstring."""
    if not stats:
        return {}
    front = frontier(tier_pass_rates(stats), cfg.advance_at)
    raw = {s.problem_id: (max(signal(s), cfg.min_weight) if front is None or s.tier <= front else 0.0)
           for s in stats}
    tiers: dict[int, list[str]] = defaultdict(list)
    for s in stats:
        tiers[s.tier].append(s.problem_id)
    total = sum(raw.values())
    tier_w = {t: sum(raw[p] for p in ids) for t, ids in tiers.items()}
    floor = min(cfg.min_tier_share, 1.0 / len(tiers))
    low = {t for t, w in tier_w.items() if total == 0 or w / total < floor}
    rest = sum(w for t, w in tier_w.items() if t not in low)
    share = {t: floor if t in low or rest <= 0 else (1 - floor * len(low)) * tier_w[t] / rest for t in tiers}
    out: dict[str, float] = {}
    for t, ids in tiers.items():
        for p in ids:  # spread the tier's share by the problems' own weights, evenly if all 0
            out[p] = share[t] * (raw[p] / tier_w[t] if tier_w[t] > 0 else 1 / len(ids))
    scale = len(out) / sum(out.values())
    return {p: w * scale for p, w in out.items()}


def rows(stats: list[ProblemStats], cfg: CurriculumConfig) -> list[CurriculumRow]:
    w = weights(stats, cfg)
    now = time.time()
    return [CurriculumRow(problem_id=s.problem_id, tier=s.tier, attempts=s.attempts, successes=s.successes,
                          mean_reward=s.mean_reward, recent_success=s.recent_success,
                          weight=w[s.problem_id], updated=now) for s in stats]


async def update(store: Store, cfg: CurriculumConfig) -> list[CurriculumRow]:
    """Recompute every problem's statistics and weight and write them to the store."""
    stats = await store.read(lambda c: gather(c, cfg.window))
    out = rows(stats, cfg)
    await store.put_curriculum(out)
    return out


def summary(out: list[CurriculumRow], cfg: CurriculumConfig) -> str:
    """One line per tier: problems, recent pass rate, share of the weight."""
    total = sum(r.weight for r in out) or 1.0
    by_tier: dict[int, list[CurriculumRow]] = defaultdict(list)
    for r in out:
        by_tier[r.tier].append(r)
    lines = [f"{'tier':>4}  {'problems':>8}  {'attempted':>9}  {'pass':>6}  {'share':>6}"]
    for t in sorted(by_tier):
        rs = by_tier[t]
        tried = [r for r in rs if r.recent_success is not None]
        rate = f"{sum(r.recent_success or 0 for r in tried) / len(tried):.2f}" if tried else "-"
        lines.append(f"{t:>4}  {len(rs):>8}  {len(tried):>9}  {rate:>6}  {sum(r.weight for r in rs) / total:>6.1%}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trainer.curriculum", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", required=True, help="SQLite store")
    d = CurriculumConfig()
    p.add_argument("--window", type=int, default=d.window, help="recent episodes per problem")
    p.add_argument("--advance-at", type=float, default=d.advance_at, help="pass rate that opens the next tier")
    p.add_argument("--min-weight", type=float, default=d.min_weight, help="floor of a problem's weight")
    p.add_argument("--min-tier-share", type=float, default=d.min_tier_share, help="least share per tier")
    a = p.parse_args(argv)
    cfg = CurriculumConfig(window=a.window, advance_at=a.advance_at, min_weight=a.min_weight,
                           min_tier_share=a.min_tier_share)

    async def go() -> list[CurriculumRow]:
        async with Store.open(a.db, lock=False) as store:
            return await update(store, cfg)

    out = anyio.run(go)
    print(summary(out, cfg))  # noqa: T201  (CLI output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
