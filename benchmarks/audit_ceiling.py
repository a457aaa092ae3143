# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""What an audit of DP-SGD's final weights can show, beside the claim.

Two DP-SGD configurations of ``tests/audit/test_epsilon.py`` release the sum
of two noisy steps that the accountant composes as if each step were
released. Along a perfect canary (its clipped gradient at the clipping
bound, the only one along its column) their final weights are, exactly, in
units of the canary's step and with ``m`` the event's noise multiplier:

- ``dpsgd_add_remove_gelu`` (two Poisson steps, rate q, add/remove): ``K +
  N(0, 2 m^2)`` with ``K ~ Binomial(2, q)``, against ``N(0, 2 m^2)``.
- ``dpsgd_shuffle_gelu`` (two shuffled batches, the canary in one):
  ``N(+-1/2, 2 m^2)``, a Gaussian mechanism at ``1 / sqrt(2)`` of the
  claim's μ.

For each, this prints the claim, the final weights' own ε at the claim's δ
(what an audit with unlimited releases could show), and, at 10,000 releases
per data set, the f-DP bound (:func:`sklearn_fil.audit.fdp_epsilon`) of the
simulated scores: with the threshold :class:`~sklearn_fil.audit.EpsilonAudit`
takes (equal errors on a held-out half), and with the one threshold best for
this mechanism fixed in advance (chosen on a pilot run) and every release
used for the bound. Mean and range over seeds. Writes
``benchmarks/results/audit_ceiling.md``.

Usage::

    python benchmarks/audit_ceiling.py [--seeds 5]
"""

import argparse
import sys
import types
import warnings
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from sklearn_fil.accounting import gaussian_epsilon
from sklearn_fil.audit import fdp_epsilon

HERE = Path(__file__).resolve().parent
_tests = types.ModuleType("tests")  # as epsilon_audit_table.py: the suite's rows
_tests.__path__ = [str(HERE.parent / "tests")]
sys.modules["tests"] = _tests
from tests.audit import test_epsilon as suite  # noqa: E402

N_RELEASES = 10_000
QUANTILES = (0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995)  # of the null's scores


def _guarantee(name):
    estimator, extra = suite.CONFIGURATIONS[name]
    X, y, fit_params = suite._configuration_data(extra, suite.data.__wrapped__())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return estimator.fit(X, y, **fit_params).guarantee_


def _poisson_sum_epsilon(q, m, steps, delta):
    """ε at ``delta`` of ``K + N(0, steps m^2)``, ``K ~ Binomial(steps, q)``,
    against ``N(0, steps m^2)``, both directions (numerical privacy profile)."""
    s = np.sqrt(steps) * m
    x = np.linspace(-14 * s, steps + 14 * s, 400_001)
    k = np.arange(steps + 1)
    mixture = stats.binom.pmf(k, steps, q) @ stats.norm.pdf(
        x[None, :] - k[:, None], 0, s
    )
    null = stats.norm.pdf(x, 0, s)

    def excess(eps, p, r):
        return np.trapezoid(np.maximum(p - np.exp(eps) * r, 0.0), x) - delta

    return max(
        optimize.brentq(excess, 0.0, 30.0, args=pair) if excess(0.0, *pair) > 0 else 0.0
        for pair in ((mixture, null), (null, mixture))
    )


def _scores(q, m, steps, rng, n=N_RELEASES):
    s = np.sqrt(steps) * m
    return rng.normal(0, s, n), rng.binomial(steps, q, n) + rng.normal(0, s, n)


def add_remove_row(seeds):
    g = _guarantee("dpsgd_add_remove_gelu")
    sampled = g.dp_event.event
    steps, q, m = (
        g.dp_event.count,
        sampled.sampling_probability,
        sampled.event.noise_multiplier,
    )
    ceiling = _poisson_sum_epsilon(q, m, steps, g.delta)

    def bound(scores, threshold=None):
        return fdp_epsilon(*scores, g, delta=g.delta, threshold=threshold).epsilon_lower

    pilot = _scores(q, m, steps, np.random.default_rng(10_000))
    null_quantiles = np.sqrt(steps) * m * stats.norm.ppf(QUANTILES)
    best = max(null_quantiles, key=lambda t: bound(pilot, t))
    held_out, fixed = [], []
    for seed in range(seeds):
        scores = _scores(q, m, steps, np.random.default_rng(seed))
        held_out.append(bound(scores))
        fixed.append(bound(scores, best))
    return g.epsilon, g.delta, ceiling, np.array(held_out), np.array(fixed)


def shuffle_row():
    g = _guarantee("dpsgd_shuffle_gelu")
    m = g.dp_event.event.noise_multiplier
    estimator = suite.CONFIGURATIONS["dpsgd_shuffle_gelu"][0]
    steps = suite.N_SAMPLES // estimator.batch_size * estimator.max_iter
    return (
        g.epsilon,
        g.delta,
        gaussian_epsilon(sigma=np.sqrt(steps) * m, sensitivity=1.0, delta=g.delta),
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    args = parser.parse_args()
    claim, delta, ceiling, held_out, fixed = add_remove_row(args.seeds)
    s_claim, _, s_ceiling = shuffle_row()

    def cell(values):
        v = values / claim
        return f"{v.mean():.2f} ({v.min():.2f}-{v.max():.2f})"

    lines = [
        "# What an audit of DP-SGD's final weights can show",
        "",
        f"`python benchmarks/audit_ceiling.py --seeds {args.seeds}`: the "
        "final weights along a perfect canary, simulated exactly (see the "
        "script's docstring); multiples of the claim; f-DP bounds at "
        f"{N_RELEASES:,} releases per data set, 95 % confidence, mean "
        f"(range) over {args.seeds} seeds.",
        "",
        "| configuration | claimed ε | δ | final weights' ε / claim | f-DP, "
        "held-out equal-error threshold | f-DP, best threshold fixed in advance |",
        "|---|---:|---:|---:|---:|---:|",
        f"| dpsgd_add_remove_gelu | {claim:.3f} | {delta:g} | "
        f"{ceiling / claim:.2f} | {cell(held_out)} | {cell(fixed)} |",
        f"| dpsgd_shuffle_gelu | {s_claim:.3f} | {delta:g} | "
        f"{s_ceiling / s_claim:.2f} | ≤ {s_ceiling / s_claim:.2f} | "
        f"≤ {s_ceiling / s_claim:.2f} |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    (HERE / "results" / "audit_ceiling.md").write_text(text)


if __name__ == "__main__":
    main()
