# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The multinomial OutputPerturbedLogisticRegression's ε against EpsilonAudit.

An honest release passes (empirical lower bound at most the claim, and
above 0: the audit sees the canary), and the same estimator with a quarter of
its noise and the full-noise claim is refuted: on these 20 rows the canary
pair (two rows ``R (a v +- b u)`` of norm ``data_norm``, ``v`` a class's
direction in the fitted weights, one label) moves the minimiser by 0.56
of the certified ``2 sqrt(2) L / (n lam)``, so a quarter of the noise puts
the pair more than two claimed noise-units apart. (Few rows cannot misclassify
the canary strongly enough for more: ``test_canaries.py``; the configuration
of many rows below reaches 0.93.)
"""

import functools

import numpy as np
import pytest

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.audit import EpsilonAudit
from tests.audit._doubles import QuarterNoiseLogisticRegression

N_SAMPLES = 20
DELTA = 0.04
PARAMS = dict(
    lam=1.0,
    fit_intercept=False,
    data_norm=1.0,
    delta=DELTA,
    per_instance_accounting=False,  # the audit reads the release only
)

pytestmark = [
    pytest.mark.usefixtures("one_numba_thread"),
    pytest.mark.filterwarnings("ignore:.*no better than a constant"),
]


# The configuration of the epsilon-audit table (benchmarks/
# epsilon_audit_table.py; too slow for a test: 70 ms a fit): as the binary
# GLMs', many rows and a column no row uses, three classes. There the
# two-point canary moves the minimiser by 0.93 of the certified sensitivity
# (tests/audit/test_canaries.py); sigma puts the claim near the binary ones.
GLM_SAMPLES = 1000
GLM_DELTA = 5e-4  # below 1 / GLM_SAMPLES


@functools.cache
def glm_data():
    """Three classes at about 0.05 times the corners of a triangle around 0
    (labels by corner), and a third column of zeros."""
    rng = np.random.default_rng(0)
    k = np.arange(GLM_SAMPLES) % 3
    angle = 2.0 * np.pi * k / 3.0
    corners = np.column_stack([np.cos(angle), np.sin(angle)])
    X = 0.05 * (corners + 0.2 * rng.normal(size=(GLM_SAMPLES, 2)))
    return np.column_stack([X, np.zeros(GLM_SAMPLES)]), np.array(["a", "b", "c"])[k]


CONFIGURATIONS = {
    "glm_multinomial": OutputPerturbedLogisticRegression(
        sigma=7.4,
        lam=4e-4,
        fit_intercept=False,
        data_norm=1.0,
        delta=GLM_DELTA,
        per_instance_accounting=False,
    ),
}


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(scale=0.4, size=(N_SAMPLES, 2))
    X /= max(1.0, np.linalg.norm(X, axis=1).max())  # every row within norm 1
    y = np.argmax(
        X @ rng.normal(size=(2, 3)) + 0.3 * rng.normal(size=(N_SAMPLES, 3)), 1
    )
    y[:3] = [0, 1, 2]
    return X, np.array(["a", "b", "c"])[y]


def test_multinomial_lower_bound_below_claim(data, global_random_seed):
    X, y = data
    estimator = OutputPerturbedLogisticRegression(target_epsilon=2.0, **PARAMS)
    audit = EpsilonAudit(estimator, n_releases=1000, random_state=global_random_seed)
    audit.fit(X, y)
    assert audit.epsilon_claimed_ == pytest.approx(2.0, rel=1e-4)
    assert audit.delta_ == DELTA
    assert audit.epsilon_lower_ <= audit.epsilon_claimed_, audit.audit_report_
    # the canary moves the release (a bound is another matter: at a claim
    # of 2 the pair is about one noise unit apart, epsilon_lower_ near 0;
    # the quarter-noise test below is the audit's power)
    assert audit.epsilon_estimate_ > 0, audit.audit_report_


def test_multinomial_quarter_noise_is_refuted(data, global_random_seed):
    X, y = data
    honest = OutputPerturbedLogisticRegression(sigma=0.1, **PARAMS).fit(X, y)
    # 2 sqrt(2) L / (n lam), certified
    assert honest.guarantee_.sensitivity == pytest.approx(
        (1 + 2e-6) * 2 * np.sqrt(2) / N_SAMPLES, rel=1e-12
    )
    audit = EpsilonAudit(
        QuarterNoiseLogisticRegression(sigma=0.1, **PARAMS),
        n_releases=1000,
        random_state=global_random_seed,
    ).fit(X, y)
    assert audit.epsilon_claimed_ == pytest.approx(honest.epsilon_)
    assert audit.epsilon_lower_ > audit.epsilon_claimed_, audit.audit_report_
