# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Guarantee.group: ε for k examples that change together, against hand
computations (the Gaussian closed form at k times the distance; the chain
of k neighbours over dp-accounting's PLD curve)."""

import math

import dp_accounting
import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm
from sklearn.datasets import make_classification

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.accounting import Guarantee, PrivacyBudget, dpsgd_dp_event

DELTA = 1e-5


def closed_form_epsilon(mu, delta):
    """ε of the Gaussian mechanism at distance / noise ``mu`` (Balle & Wang)."""

    def excess(eps):
        return (
            norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(-mu / 2 - eps / mu)
        ) - delta

    return brentq(excess, 0.0, 200.0, xtol=1e-14)


@pytest.fixture(scope="module")
def glm():
    X, y = make_classification(n_samples=100, n_features=4, random_state=1)
    X = X / np.linalg.norm(X, axis=1).max()
    return OutputPerturbedLogisticRegression(
        sigma=0.8, lam=0.1, fit_intercept=False, data_norm=1.0, delta=DELTA
    ).fit(X, y)


@pytest.mark.parametrize("k", [2, 3, 10])
def test_group_of_output_perturbation_is_the_gaussian_at_k_times_the_distance(glm, k):
    g = glm.guarantee_
    group = g.group(k)
    # k replaced rows move the minimiser by at most k Δ
    assert group.sensitivity == pytest.approx(k * g.sensitivity)
    assert group.epsilon == pytest.approx(
        closed_form_epsilon(k * g.sensitivity / g.noise_std, DELTA), rel=1e-7
    )
    assert group.delta == DELTA and group.group_size == k
    assert group.neighboring_relation == "replace_one"
    assert group.noise_std == g.noise_std
    # its event is the same release at k times the distance
    assert isinstance(group.dp_event, dp_accounting.GaussianDpEvent)
    assert group.dp_event.noise_multiplier == pytest.approx(
        g.noise_std / (k * g.sensitivity), rel=1e-14
    )
    acc = dp_accounting.pld.PLDAccountant()
    pld_eps = acc.compose(group.dp_event).get_epsilon(DELTA)
    assert group.epsilon <= pld_eps and pld_eps == pytest.approx(group.epsilon, 1e-3)
    assert f"groups of {k}" in str(group)
    # a group guarantee composes in a budget with others of its size
    budget = PrivacyBudget(epsilon=1e3, delta=DELTA)
    budget.spend(group)
    assert budget.spent == pytest.approx(group.epsilon, rel=1e-12)
    # groups of groups
    assert g.group(k).group(2).epsilon == pytest.approx(g.group(2 * k).epsilon)


def test_group_of_shuffled_dpsgd_is_exact():
    """Shuffled DP-SGD under replace-one: epochs Gaussian mechanisms at
    distance 2 s C; k rows spread over batches move the epoch's releases by at
    most 2 k s C in all."""
    event, relation = dpsgd_dp_event(
        noise_multiplier=3.0,
        sample_rate=1.0,
        steps=4,
        sensitivity=1.0,
        neighboring_relation="replace_one",
    )
    g = Guarantee(
        epsilon=closed_form_epsilon(2 * math.sqrt(4) / 3.0, DELTA),
        delta=DELTA,
        neighboring_relation="replace_one",
        sensitivity=2.0,
        noise_std=3.0,
        dp_event=event,
        event_relation=relation,
    )
    assert g.group(3).epsilon == pytest.approx(
        closed_form_epsilon(3 * 2 * math.sqrt(4) / 3.0, DELTA), rel=1e-7
    )


def _group_delta(delta_1, eps_1, k):
    """The chain's δ: δ₁ (1 + e^ε₁ + ... + e^{(k-1) ε₁})."""
    return delta_1 * sum(math.exp(i * eps_1) for i in range(k))


@pytest.mark.parametrize("k", [2, 4])
def test_group_of_poisson_dpsgd_is_the_chain_of_k_neighbours(k):
    q, steps, noise = 0.1, 20, 2.0
    event, relation = dpsgd_dp_event(
        noise_multiplier=noise,
        sample_rate=q,
        steps=steps,
        neighboring_relation="replace_one",
    )
    g = Guarantee(
        epsilon=1.0,
        delta=DELTA,
        neighboring_relation="replace_one",
        sensitivity=2.0,
        noise_std=noise,
        dp_event=event,
        event_relation=relation,
    )
    group = g.group(k)
    assert group.dp_event is None and group.group_size == k
    # the one-example PLD curve, by hand
    acc = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE
    ).compose(
        dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(
                q, dp_accounting.GaussianDpEvent(noise)
            ),
            steps,
        )
    )
    # the reported δ₁ is feasible: the group's δ stays within DELTA
    delta_1 = float(group.accountant.split("delta_1=")[1].split(",")[0])
    eps_1 = group.epsilon / k
    assert eps_1 == pytest.approx(acc.get_epsilon(delta_1), rel=1e-2)
    assert _group_delta(delta_1, acc.get_epsilon(delta_1 * 1.001), k) <= DELTA
    # and near the best of a fine grid of feasible δ₁ (the bound is a
    # minimum over them)
    best = math.inf
    for d1 in np.geomspace(DELTA / k * 1e-10, DELTA / k, 80):
        e1 = acc.get_epsilon(d1)
        if _group_delta(d1, e1, k) <= DELTA:
            best = min(best, k * e1)
    assert group.epsilon <= best * (1 + 1e-6)
    assert group.epsilon == pytest.approx(best, rel=2e-2)
    # a group is less private than one example
    assert group.epsilon > acc.get_epsilon(DELTA)
    with pytest.raises(ValueError, match="no dp_event"):
        PrivacyBudget(epsilon=100.0, delta=DELTA).spend(group)


def test_group_edge_cases(glm):
    g = glm.guarantee_
    assert g.group(1) is g
    none = Guarantee.none("no clipping")
    assert none.group(3) is none
    for bad in (0, 1.5, True, -2):
        with pytest.raises(ValueError, match="k must be"):
            g.group(bad)
    with pytest.raises(ValueError, match="no dp_event"):
        Guarantee(epsilon=1.0, delta=DELTA, neighboring_relation="replace_one").group(2)
