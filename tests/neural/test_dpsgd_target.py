# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier(target_epsilon=...), noise_multiplier_ and dp_event_:
against dp-accounting called directly on events built here by hand (the
sampling rate, step count and 2 s C of the run), and the Gaussian closed form
for shuffled batches."""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from scipy.stats import norm
from sklearn.datasets import make_classification

from sklearn_fil import DPSGDClassifier
from sklearn_fil.accounting import PrivacyBudget, gelu_clip_max_norm
from sklearn_fil.exceptions import PrivacyLeakWarning

N, BATCH, EPOCHS, DELTA = 200, 20, 2, 1e-4
Q, STEPS = BATCH / N, round(N / BATCH) * EPOCHS
REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE


@pytest.fixture(scope="module")
def data():
    return make_classification(n_samples=N, n_features=3, n_redundant=0, random_state=0)


def _model(**params):
    defaults = dict(
        batch_size=BATCH,
        max_iter=EPOCHS,
        delta=DELTA,
        learning_rate=0.5,
        per_instance_accounting=False,
        fil_accounting=False,
        random_state=0,
    )
    return DPSGDClassifier(**{**defaults, **params})


def _hand_pld_epsilon(noise_over_s, q=Q, steps=STEPS):
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            q, dp_accounting.GaussianDpEvent(noise_over_s)
        ),
        steps,
    )
    acc = dp_accounting.pld.PLDAccountant(REPLACE_ONE)
    return acc.compose(event).get_epsilon(DELTA)


@pytest.mark.parametrize("clipping, s", [("gelu", None), ("hard", 1.0)])
def test_poisson_replace_one_calibration(data, clipping, s):
    s = gelu_clip_max_norm(1.0) if s is None else s
    target = 3.0
    model = _model(target_epsilon=target, noise_multiplier=0.01, clipping=clipping)
    model.fit(*data)
    assert model.epsilon_ <= target
    assert model.epsilon_ == pytest.approx(target, rel=1e-4)
    # dp-accounting on the hand-built event: q = batch / n, round(n / batch)
    # steps per epoch, noise over the clipped-norm bound s, REPLACE_ONE
    hand = _hand_pld_epsilon(model.noise_multiplier_ / s)
    assert hand == pytest.approx(target, rel=1e-3)
    g = model.guarantee_
    assert g.noise_std == model.noise_multiplier_ * model.max_grad_norm
    assert g.event_relation == "replace_one"
    assert "calibrated" in g.accountant
    assert model.release().noise_multiplier_ == model.noise_multiplier_
    # the composition of the run's event by dp-accounting is epsilon_
    acc = dp_accounting.pld.PLDAccountant(REPLACE_ONE)
    assert acc.compose(model.dp_event_).get_epsilon(DELTA) == pytest.approx(
        model.epsilon_, rel=1e-3
    )
    budget = PrivacyBudget(epsilon=10.0, delta=DELTA)
    assert budget.spend(model) == pytest.approx(model.epsilon_, rel=1e-9)


def test_shuffled_calibration_is_the_gaussian_at_distance_2sC(data):
    """One Gaussian mechanism per epoch at distance 2 s C: EPOCHS of them at
    noise m C are one at distance 2 s / (m / sqrt(EPOCHS))."""
    target = 2.0
    model = _model(target_epsilon=target, sampling="shuffle", clipping="hard")
    model.fit(*data)
    mu = 2 * math.sqrt(EPOCHS) / model.noise_multiplier_

    def delta(eps):
        return norm.cdf(mu / 2 - eps / mu) - math.exp(eps) * norm.cdf(
            -mu / 2 - eps / mu
        )

    assert delta(target) <= DELTA * (1 + 1e-9)
    assert delta(target) == pytest.approx(DELTA, rel=1e-6)
    assert model.epsilon_ <= target
    assert model.dp_event_ == dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(model.noise_multiplier_ / 2), EPOCHS
    )
    # groups of 3 rows spread over the epoch's batches: 3 times the distance
    assert model.guarantee_.group(3).epsilon > model.epsilon_


def test_noise_multiplier_without_target(data):
    model = _model(noise_multiplier=1.7).fit(*data)
    assert model.noise_multiplier_ == 1.7
    assert model.epsilon_ == pytest.approx(
        _hand_pld_epsilon(1.7 / gelu_clip_max_norm(1.0)), rel=1e-3
    )
    group = model.guarantee_.group(2)
    assert group.epsilon > model.epsilon_ and group.group_size == 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        silent = _model(noise_multiplier=0.0).fit(*data)
    assert silent.noise_multiplier_ == 0.0
    with pytest.warns(PrivacyLeakWarning, match="noise_multiplier=0"):
        assert silent.dp_event_ is None


def test_target_errors_before_any_work(data):
    with pytest.raises(ValueError, match=r"target_epsilon=1\.0 needs clipping"):
        _model(target_epsilon=1.0, clipping=None).fit(*data)
    with pytest.raises(ValueError, match="accountant='rdp' cannot"):
        _model(target_epsilon=1.0, accountant="rdp").fit(*data)
    with pytest.raises(ValueError, match="target_epsilon"):
        _model(target_epsilon=0.0).fit(*data)
    model = _model(target_epsilon=1.0, clipping=None)
    with pytest.raises(ValueError):
        model.fit(*data)
    assert not hasattr(model, "noise_multiplier_")


def test_rdp_add_remove_calibration(data):
    target = 2.5
    model = _model(
        target_epsilon=target,
        accountant="rdp",
        neighboring_relation="add_remove",
        public_n_samples=N,
        clipping="hard",
    ).fit(*data)
    acc = dp_accounting.rdp.RdpAccountant()
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            Q, dp_accounting.GaussianDpEvent(model.noise_multiplier_)
        ),
        STEPS,
    )
    eps = acc.compose(event).get_epsilon(DELTA)
    assert eps <= target
    assert eps == pytest.approx(target, rel=1e-4)
    assert model.dp_event_ == event
    assert np.isclose(model.epsilon_, eps, rtol=1e-12)
