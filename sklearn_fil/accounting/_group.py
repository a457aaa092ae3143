"""Group privacy of a guarantee: ε for ``k`` examples that change together."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import dataclasses
import math

from scipy.optimize import brentq

from sklearn_fil.accounting._events import (
    gaussian_noise_multiplier,
    make_accountant,
    quiet_absl,
    scale_gaussian_event,
    smallest_noise,
)
from sklearn_fil.accounting._gaussian import gaussian_epsilon

# Search of the per-example δ₁ on a log scale: at most this many factors of e
# below δ / k.
_MAX_DECADES = 200


def _log_group_delta_factor(epsilon, k):
    """``log((e^{k ε} - 1) / (e^ε - 1))``, the chain's δ factor (k at ε = 0)."""
    if epsilon == 0.0:
        return math.log(k)
    if math.isinf(epsilon):
        return math.inf

    # log(expm1(k e)) - log(expm1(e)), stable for large k e
    def log_expm1(x):
        return x + math.log(-math.expm1(-x)) if x > 1.0 else math.log(math.expm1(x))

    return log_expm1(k * epsilon) - log_expm1(epsilon)


def group_guarantee(guarantee, k):
    """The :meth:`Guarantee.group` of a guarantee with a ``dp_event``, ``k >= 2``."""
    event, delta = guarantee.dp_event, guarantee.delta
    sensitivity = None if guarantee.sensitivity is None else k * guarantee.sensitivity
    common = dict(group_size=guarantee.group_size * k, sensitivity=sensitivity)
    effective = None
    if guarantee.event_relation == "add_remove":
        effective = gaussian_noise_multiplier(event)
    if effective is not None:
        # Gaussian mechanisms at unit distance: k times the distance, exactly.
        epsilon = (
            math.inf
            if effective == 0.0
            else gaussian_epsilon(sigma=effective, sensitivity=float(k), delta=delta)
        )
        return dataclasses.replace(
            guarantee,
            epsilon=epsilon,
            dp_event=scale_gaussian_event(event, float(k)),
            accountant=(
                f"analytic Gaussian mechanism at {k} times the sensitivity "
                "(dp-accounting)"
            ),
            **common,
        )
    epsilon, delta_1 = _chain_epsilon(event, guarantee.event_relation, delta, k)
    return dataclasses.replace(
        guarantee,
        epsilon=epsilon,
        dp_event=None,
        event_relation=None,
        accountant=(
            f"group privacy of the PLD bound (dp-accounting): k eps_1 at "
            f"delta_1={delta_1:.3g}, delta_1 (e^(k eps_1) - 1) / (e^eps_1 - 1) <= "
            f"delta (Vadhan 2017, Lemma 2.2)"
        ),
        **common,
    )


def _chain_epsilon(event, relation, delta, k):
    """``(k ε₁(δ₁), δ₁)`` with the largest δ₁ whose group δ is at most ``delta``.

    ``ε₁(δ₁)`` is the PLD curve of ``event``. The search assumes the group δ
    ``δ₁ (e^{k ε₁(δ₁)} - 1) / (e^{ε₁(δ₁)} - 1)`` grows with δ₁ (it does for
    the Gaussian-type curves here); whatever it finds, the returned δ₁ is
    checked to keep the group δ at most ``delta``, so the result is a
    guarantee even where that assumption fails.
    """
    acc = make_accountant("pld", relation, smallest_noise(event))
    with quiet_absl():
        acc.compose(event)

    def epsilon_1(log_delta_1):
        with quiet_absl():
            return float(acc.get_epsilon(math.exp(log_delta_1)))

    def excess(log_delta_1):
        # log of the group δ minus log δ: <= 0 where δ₁ is feasible
        eps = epsilon_1(log_delta_1)
        return log_delta_1 + _log_group_delta_factor(eps, k) - math.log(delta)

    high = math.log(delta / k)  # the factor is at least k
    if excess(high) <= 0.0:
        log_delta_1 = high
    else:
        # step down (by factors e) to a feasible δ₁; the PLD has no finite ε
        # below its truncated mass, where the search gives up
        for _ in range(_MAX_DECADES):
            low = high - 1.0
            if excess(low) <= 0.0:
                break
            if math.isinf(epsilon_1(low)):
                return math.inf, 0.0
            high = low
        else:
            return math.inf, 0.0
        log_delta_1 = brentq(excess, low, high, xtol=1e-10, rtol=1e-12)
        # stay on the feasible side
        step = 1e-9
        while excess(log_delta_1) > 0.0:
            log_delta_1 -= step
            step *= 2.0
    return k * epsilon_1(log_delta_1), math.exp(log_delta_1)
