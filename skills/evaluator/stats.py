"""Statistics of timing samples: the median and its distribution-free 95% interval."""

from __future__ import annotations

import math
from statistics import fmean, pstdev

from skills.evaluator.results import Interval


def _binom_pmf(i: int, n: int) -> float:
    """P(X = i) for X ~ Binomial(n, 1/2), in log space so large n is safe."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + n * math.log(0.5))


def median_interval(samples: list[float], confidence: float = 0.95) -> Interval:
    """Median with the order-statistic confidence interval of the median.

    The interval [x_(j), x_(n-j+1)] covers the true median with probability
    1 - 2 P(Bin(n, 1/2) <= j - 1); j is the largest index keeping that >= `confidence`.
    Needs no assumption about the distribution, so heavy tails from clock jitter are fine.
    """
    if not samples:
        raise ValueError("median_interval needs at least one sample")
    xs = sorted(samples)
    n = len(xs)
    mid = n // 2
    median = xs[mid] if n % 2 else 0.5 * (xs[mid - 1] + xs[mid])
    alpha = 1.0 - confidence
    # j = number of order statistics cut from each end; cdf = P(X <= j - 1) as j grows.
    j, cdf = 0, 0.0
    while j + 1 <= n // 2 and 2.0 * (cdf + _binom_pmf(j, n)) <= alpha:
        cdf += _binom_pmf(j, n)
        j += 1
    if j == 0:  # too few samples for a 95% interval: report the full range
        return Interval(median=median, low=xs[0], high=xs[-1], n=n)
    return Interval(median=median, low=xs[j - 1], high=xs[n - j], n=n)


def coefficient_of_variation(samples: list[float]) -> float:
    """std / mean of the samples (0 for fewer than two)."""
    if len(samples) < 2:
        return 0.0
    mean = fmean(samples)
    return pstdev(samples) / mean if mean else 0.0
