"""dp_event_epsilon and scale_dp_event against closed forms and dp-accounting."""

import math

import dp_accounting
import numpy as np
import pytest
from scipy import stats

from sklearn_fil.accounting import dp_event_epsilon, scale_dp_event


def _gaussian_delta(epsilon, mu):
    """δ(ε) of the Gaussian mechanism at distance μ (Balle & Wang 2018)."""
    return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(
        -epsilon / mu - mu / 2
    )


@pytest.mark.parametrize("relation, distance", [("add_remove", 1), ("replace_one", 2)])
def test_gaussian_composition_is_exact(relation, distance):
    """Three Gaussians at noise 2 are one at 2 / sqrt(3); under replace-one a
    Gaussian event is read at distance 2, as dp-accounting's PLD reads it."""
    event = dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 3)
    epsilon = dp_event_epsilon(event, 1e-5, event_relation=relation)
    mu = distance * math.sqrt(3) / 2.0
    assert _gaussian_delta(epsilon, mu) == pytest.approx(1e-5, rel=1e-6)


def test_sampled_event_matches_dp_accounting_default_grid():
    """Poisson-sampled steps: the PLD on our grid is pessimistic, and within
    1e-3 of dp-accounting's own default (finer) grid."""
    step = dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(1.0))
    event = dp_accounting.SelfComposedDpEvent(step, 50)
    ours = dp_event_epsilon(event, 1e-5)
    reference = dp_accounting.pld.PLDAccountant().compose(event).get_epsilon(1e-5)
    assert reference - 1e-9 <= ours <= reference + 1e-3


def test_scale_dp_event_scales_every_gaussian_through_sampling():
    step = dp_accounting.PoissonSampledDpEvent(0.05, dp_accounting.GaussianDpEvent(1.0))
    event = dp_accounting.ComposedDpEvent(
        [dp_accounting.SelfComposedDpEvent(step, 4), dp_accounting.GaussianDpEvent(3.0)]
    )
    scaled = scale_dp_event(event, 2.0)
    sampled, gaussian = scaled.events
    assert sampled.count == 4 and sampled.event.sampling_probability == 0.05
    assert sampled.event.event.noise_multiplier == 0.5
    assert gaussian.noise_multiplier == 1.5
    # more sensitivity is less privacy
    assert dp_event_epsilon(scaled, 1e-5) > dp_event_epsilon(event, 1e-5)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: scale_dp_event(dp_accounting.GaussianDpEvent(1.0), 0.0), "factor"),
        (
            lambda: scale_dp_event(dp_accounting.LaplaceDpEvent(1.0), 2.0),
            "Gaussian mechanisms",
        ),
        (lambda: dp_event_epsilon(dp_accounting.GaussianDpEvent(1.0), 0.0), "delta"),
        (
            lambda: dp_event_epsilon(
                dp_accounting.GaussianDpEvent(1.0), 1e-5, event_relation="swap"
            ),
            "relation",
        ),
    ],
)
def test_bad_input(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_noiseless_and_empty_events():
    assert dp_event_epsilon(dp_accounting.GaussianDpEvent(0.0), 1e-5) == np.inf
    assert dp_event_epsilon(dp_accounting.NoOpDpEvent(), 1e-5) == 0.0
