# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Noise calibration for a target epsilon, against independent computations:
the Balle & Wang closed form of the Gaussian mechanism, and dp-accounting's
accountants and calibration called directly on hand-built events."""

import math

import dp_accounting
import pytest
from dp_accounting.mechanism_calibration import ExplicitBracketInterval
from scipy.optimize import brentq
from scipy.stats import norm

from sklearn_fil.accounting import (
    dpsgd_dp_event,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    gaussian_sigma,
    gelu_clip_max_norm,
)

REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE
ADD_OR_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


def balle_wang_delta(epsilon, sigma, sensitivity):
    """Exact δ(ε) of the Gaussian mechanism, Balle & Wang (2018, Theorem 8)."""
    a = sensitivity / (2.0 * sigma)
    b = epsilon * sigma / sensitivity
    return norm.cdf(a - b) - math.exp(epsilon) * norm.cdf(-a - b)


# --------------------------------------------------------------------------------------
# the Gaussian mechanism


@pytest.mark.parametrize("epsilon", [0.01, 0.3, 1.0, 4.0, 30.0])
@pytest.mark.parametrize("delta", [1e-9, 1e-5, 0.05])
@pytest.mark.parametrize("sensitivity", [1e-3, 1.0, 17.0])
def test_gaussian_sigma_inverts_the_closed_form(epsilon, delta, sensitivity):
    sigma = gaussian_sigma(epsilon=epsilon, delta=delta, sensitivity=sensitivity)
    # the root of the closed form in sigma, found here independently
    expected = brentq(
        lambda s: balle_wang_delta(epsilon, s, sensitivity) - delta,
        1e-3 * sensitivity,
        1e4 * sensitivity,
        xtol=1e-300,
        rtol=1e-15,
    )
    assert sigma == pytest.approx(expected, rel=1e-9)
    # the target holds at the calibrated noise, and fails just below it
    assert balle_wang_delta(epsilon, sigma, sensitivity) <= delta * (1 + 1e-9)
    assert balle_wang_delta(epsilon, sigma * (1 - 1e-6), sensitivity) > delta


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 0.9])
def test_gaussian_sigma_below_the_classical_formula(epsilon):
    # Dwork & Roth (2014, Theorem A.1): valid for epsilon < 1, and loose
    delta = 1e-5
    classical = math.sqrt(2 * math.log(1.25 / delta)) / epsilon
    assert gaussian_sigma(epsilon=epsilon, delta=delta, sensitivity=1.0) < classical


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(epsilon=0.0, delta=1e-5, sensitivity=1.0),
        dict(epsilon=1.0, delta=0.0, sensitivity=1.0),
        dict(epsilon=1.0, delta=1.0, sensitivity=1.0),
        dict(epsilon=1.0, delta=1e-5, sensitivity=-1.0),
        dict(epsilon=math.inf, delta=1e-5, sensitivity=1.0),
    ],
)
def test_gaussian_sigma_bad_input(kwargs):
    with pytest.raises(ValueError):
        gaussian_sigma(**kwargs)


# --------------------------------------------------------------------------------------
# DP-SGD


def _hand_event(noise_multiplier, q, steps):
    """DP-SGD's steps as dp-accounting events, built here by hand."""
    step = dp_accounting.PoissonSampledDpEvent(
        q, dp_accounting.GaussianDpEvent(noise_multiplier)
    )
    return dp_accounting.SelfComposedDpEvent(step, steps)


def test_dpsgd_calibration_replace_one_poisson_against_dp_accounting():
    """Poisson sampling under replace-one, GELU clipping: dp-accounting's
    REPLACE_ONE PLD of the hand-built event, at the calibrated noise over the
    GELU constant, gives the target (never more)."""
    s = gelu_clip_max_norm(1.0)
    q, steps, delta, target = 0.2, 5, 1e-5, 3.0
    noise = dpsgd_noise_multiplier(
        target_epsilon=target,
        sample_rate=q,
        steps=steps,
        delta=delta,
        sensitivity=s,
        accountant="pld",
        neighboring_relation="replace_one",
    )
    acc = dp_accounting.pld.PLDAccountant(REPLACE_ONE)
    eps = acc.compose(_hand_event(noise / s, q, steps)).get_epsilon(delta)
    assert eps <= target
    assert eps == pytest.approx(target, rel=1e-3)
    # dp-accounting's own calibration of the same event agrees
    direct = dp_accounting.calibrate_dp_mechanism(
        lambda: dp_accounting.pld.PLDAccountant(
            REPLACE_ONE, value_discretization_interval=1e-3
        ),
        lambda m: _hand_event(m, q, steps),
        target,
        delta,
        bracket_interval=ExplicitBracketInterval(1.0, 3.0),
        tol=1e-4,
    )
    assert noise / s == pytest.approx(direct, rel=1e-3)
    # and what the estimator reports at that noise is within the target
    reported = dpsgd_epsilon(
        noise_multiplier=noise,
        sample_rate=q,
        steps=steps,
        delta=delta,
        sensitivity=s,
        accountant="pld",
        neighboring_relation="replace_one",
    )
    assert reported <= target
    assert reported == pytest.approx(target, rel=1e-3)


def test_dpsgd_calibration_rdp_add_remove_against_dp_accounting():
    q, steps, delta, target = 0.05, 200, 1e-6, 1.5
    noise = dpsgd_noise_multiplier(
        target_epsilon=target, sample_rate=q, steps=steps, delta=delta, accountant="rdp"
    )
    acc = dp_accounting.rdp.RdpAccountant(neighboring_relation=ADD_OR_REMOVE)
    eps = acc.compose(_hand_event(noise, q, steps)).get_epsilon(delta)
    assert eps <= target
    assert eps == pytest.approx(target, rel=1e-4)  # the RDP curve is smooth


@pytest.mark.parametrize("accountant", ["pld", "rdp"])
def test_dpsgd_calibration_without_sampling_is_the_gaussian_at_distance_2sC(
    accountant,
):
    """Shuffled batches under replace-one: one Gaussian mechanism per epoch at
    distance 2 s C. With the PLD accountant epsilon is the exact Gaussian
    mechanism's, so the calibrated noise is the closed form's root."""
    s, epochs, delta, target = 1.0, 4, 1e-5, 2.0
    noise = dpsgd_noise_multiplier(
        target_epsilon=target,
        sample_rate=1.0,
        steps=epochs,
        delta=delta,
        sensitivity=s,
        accountant=accountant,
        neighboring_relation="replace_one",
    )
    # epochs Gaussian mechanisms at distance 2 s and noise `noise`: one at
    # noise noise / sqrt(epochs)
    exact = balle_wang_delta(target, noise / math.sqrt(epochs), 2 * s)
    if accountant == "pld":
        assert exact <= delta * (1 + 1e-9)
        assert (
            balle_wang_delta(target, noise * (1 - 1e-6) / math.sqrt(epochs), 2 * s)
            > delta
        )
    else:
        # RDP is looser than the exact curve: more noise than needed
        assert exact < delta
        acc = dp_accounting.rdp.RdpAccountant()
        event = dp_accounting.SelfComposedDpEvent(
            dp_accounting.GaussianDpEvent(noise / (2 * s)), epochs
        )
        eps = acc.compose(event).get_epsilon(delta)
        assert eps <= target
        assert eps == pytest.approx(target, rel=1e-4)


def test_dpsgd_dp_event_is_the_reported_epsilon():
    q, steps, delta = 0.1, 30, 1e-5
    event, relation = dpsgd_dp_event(
        noise_multiplier=2.2,
        sample_rate=q,
        steps=steps,
        sensitivity=1.1,
        neighboring_relation="replace_one",
    )
    assert relation == "replace_one"
    assert event == _hand_event(2.0, q, steps)
    acc = dp_accounting.pld.PLDAccountant(REPLACE_ONE)
    assert acc.compose(event).get_epsilon(delta) == pytest.approx(
        dpsgd_epsilon(
            noise_multiplier=2.2,
            sample_rate=q,
            steps=steps,
            delta=delta,
            sensitivity=1.1,
            accountant="pld",
            neighboring_relation="replace_one",
        ),
        rel=1e-12,
    )
    # without sampling, under replace-one: unit distance, half the noise
    event, relation = dpsgd_dp_event(
        noise_multiplier=2.0,
        sample_rate=1.0,
        steps=3,
        neighboring_relation="replace_one",
    )
    assert relation == "add_remove"
    assert event == dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(1.0), 3
    )


def test_dpsgd_calibration_bad_input():
    common = dict(sample_rate=0.1, steps=10, delta=1e-5)
    with pytest.raises(ValueError, match="target_epsilon"):
        dpsgd_noise_multiplier(target_epsilon=0.0, **common)
    with pytest.raises(ValueError, match="steps"):
        dpsgd_noise_multiplier(target_epsilon=1.0, sample_rate=0.1, steps=0, delta=1e-5)
    with pytest.raises(ValueError, match="accountant='rdp' cannot"):
        dpsgd_noise_multiplier(
            target_epsilon=1.0,
            accountant="rdp",
            neighboring_relation="replace_one",
            **common,
        )
    with pytest.raises(ValueError, match="accountant"):
        dpsgd_noise_multiplier(target_epsilon=1.0, accountant="moments", **common)
