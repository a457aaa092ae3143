"""Random stopping: the number of repetitions, its event and its calibration.

Papernot and Steinke (ICLR 2022) run a base mechanism ``K`` times, ``K`` drawn
from a truncated negative binomial distribution of shape ``η`` (``η = 0``:
logarithmic, ``η = 1``: geometric; ``η = inf``: Poisson), and keep the best
run. dp-accounting's RDP accountant composes it as ``RepeatAndSelectDpEvent(
event, mean, shape)``; this module draws ``K`` from the same distribution and
calibrates the noise of every part of a search to a total ε through that
accountant (dp-accounting's public API only).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import math

import numpy as np
from scipy.optimize import brentq

from sklearn_fil.accounting import gaussian_epsilon

# Candidates are asked for a little more noise than the accounting assumes,
# so that their calibration's float64 rounding never leaves them below it.
NOISE_MARGIN = 1e-6
# The smallest epsilon a candidate is asked for (DPSGDClassifier's least).
MIN_EPSILON = 1e-6
# Bracket of the common noise scale searched by the calibration.
_SCALE_RANGE = (1e-4, 1e5)


def repetition_gamma(mean, shape):
    """The parameter gamma of the truncated negative binomial with this mean.

    ``P(K = k) ∝ (1 - gamma)^k Γ(k + η) / (Γ(η) k!)`` for ``k >= 1``; its
    mean is ``η (1 - gamma) / (gamma (1 - gamma^η))``, and ``(1 - gamma) /
    (gamma log(1 / gamma))`` at ``η = 0`` (Papernot and Steinke 2022,
    section 2). None for the Poisson distribution (``shape = inf``).
    """
    if math.isinf(shape):
        return None
    if mean == 1.0:
        return 1.0

    def excess(log_gamma):
        g = math.exp(log_gamma)
        if shape == 0.0:
            value = -math.expm1(log_gamma) / (g * -log_gamma)
        else:
            value = (
                shape * -math.expm1(log_gamma) / (g * -math.expm1(shape * log_gamma))
            )
        return value - mean

    return math.exp(brentq(excess, math.log(1e-300), -1e-12, xtol=1e-14, rtol=1e-15))


def draw_repetitions(rng, mean, shape):
    """One draw of the number of repetitions ``K`` (a Python int).

    Truncated negative binomial: a negative binomial with ``η`` successes of
    probability gamma, redrawn while 0; logarithmic: NumPy's log-series with
    ``p = 1 - gamma``; Poisson: may be 0.
    """
    if math.isinf(shape):
        return int(rng.poisson(mean))
    gamma = repetition_gamma(mean, shape)
    if gamma >= 1.0:
        return 1
    if shape == 0.0:
        return int(rng.logseries(1.0 - gamma))
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k > 0:
            return k


def _accountant():
    import dp_accounting

    return dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )


def rdp_epsilon(event, delta):
    """ε at δ of ``event`` by dp-accounting's RDP accountant (add/remove reading).

    The accountant and orders of ``PrivacyBudget(..., accountant="rdp")``.
    """
    import logging

    logger = logging.getLogger("absl")  # per-order convergence notes
    level = logger.level
    logger.setLevel(max(level, logging.ERROR))
    try:
        acc = _accountant()
        acc.compose(event)
        return float(acc.get_epsilon(delta))
    finally:
        logger.setLevel(level)


@functools.lru_cache(maxsize=256)
def dominated(event, noise_multiplier):
    """Whether ``event``'s RDP is at most the Gaussian's at every order.

    ``GaussianDpEvent(noise_multiplier)`` has RDP ``alpha / (2 m^2)``; an event
    below it at each of the accountant's orders can stand in for it in the
    repeat-and-select accounting, which is increasing in the base RDP.
    """
    acc = _accountant()
    if not acc.supports(event):
        return False
    acc.compose(event)
    bound = np.asarray(acc.orders) / (2.0 * noise_multiplier**2)
    return bool(np.all(np.asarray(acc.rdp) <= bound))


def search_event(noise, mean, shape):
    """The search's event from its noise multipliers.

    ``noise`` is ``(model, score, refit)``, the refit's None without one:
    ``RepeatAndSelectDpEvent(ComposedDpEvent([model, score]), mean, shape)``,
    composed with the refit's ``GaussianDpEvent``.
    """
    import dp_accounting

    model, score, refit = noise
    run = dp_accounting.ComposedDpEvent(
        [dp_accounting.GaussianDpEvent(model), dp_accounting.GaussianDpEvent(score)]
    )
    event = dp_accounting.dp_event.RepeatAndSelectDpEvent(run, float(mean), shape)
    if refit is None:
        return event
    return dp_accounting.ComposedDpEvent([event, dp_accounting.GaussianDpEvent(refit)])


def _noise(scale, split, refit):
    """Noise multipliers ``scale / sqrt(share)`` of model, score and refit."""
    model, score, refit_share = split
    return (
        scale / math.sqrt(model),
        scale / math.sqrt(score),
        scale / math.sqrt(refit_share) if refit else None,
    )


@functools.lru_cache(maxsize=64)
def calibrate(target_epsilon, delta, split, mean, shape, refit):
    """Noise multipliers whose search event has ε at most ``target_epsilon``.

    The multipliers are ``c / sqrt(share)`` for the shares ``split`` of model,
    score and refit (their precisions ``1 / m²`` are in the ratio of the
    shares); ``c`` is found by Brent's method on ``log c`` and then nudged up
    until the RDP accountant's ε at ``delta`` is at most the target (within
    ``1e-6`` relative below it).

    Returns
    -------
    noise : tuple of float
        ``(model, score, refit)`` noise multipliers (refit None without one).
    epsilon : float
        The search's ε at ``delta``.

    Raises
    ------
    ValueError
        When no noise reaches the target (the selection's own cost at
        ``delta`` and the accountant's orders exceeds it).
    """

    def excess(log_scale):
        noise = _noise(math.exp(log_scale), split, refit)
        return rdp_epsilon(search_event(noise, mean, shape), delta) - target_epsilon

    low, high = (math.log(v) for v in _SCALE_RANGE)
    floor = excess(high) + target_epsilon
    if not floor < target_epsilon:
        raise ValueError(
            f"target_epsilon={target_epsilon:g} is out of reach: the private "
            f"selection costs epsilon={floor:.4g} at delta={delta:g} even with "
            f"noise multipliers of {_SCALE_RANGE[1]:g} (n_iter={mean:g}, "
            f"shape={shape:g}). Raise target_epsilon or delta, or lower n_iter."
        )
    log_scale = brentq(excess, low, high, xtol=1e-10, rtol=1e-9)
    while excess(log_scale) > 0.0:
        log_scale += 1e-7
    noise = _noise(math.exp(log_scale), split, refit)
    return noise, rdp_epsilon(search_event(noise, mean, shape), delta)


def candidate_epsilon(noise_multiplier, delta):
    """The ε a candidate is asked for: a Gaussian mechanism with a little more noise.

    Its ε at ``delta`` is the analytic Gaussian mechanism's at unit
    sensitivity and noise ``noise_multiplier * (1 + NOISE_MARGIN)``.
    """
    epsilon = gaussian_epsilon(
        sigma=noise_multiplier * (1.0 + NOISE_MARGIN), sensitivity=1.0, delta=delta
    )
    if not epsilon >= MIN_EPSILON:
        raise ValueError(
            f"A noise multiplier of {noise_multiplier:.4g} is "
            f"(epsilon={epsilon:.3g}, delta={delta:g})-DP: below "
            f"{MIN_EPSILON:g}, no candidate can be calibrated to it. Give that "
            "part a larger privacy_shares entry, or lower delta."
        )
    return epsilon
