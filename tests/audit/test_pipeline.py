# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The audits on a fitted Pipeline: a frozen public prefix and the audited
final step, equal to auditing the final step on the transformed rows by hand;
models the audits cannot audit are refused before any work."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, TransformerMixin, clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.audit import EpsilonAudit, IntrinsicPrivacyAudit, canary_neighbours
from tests._compas import compas, compas_columns

pytestmark = pytest.mark.usefixtures("one_numba_thread")


def _private_glm(**params):
    """A logistic regression that reports a guarantee (clipped rows, penalised
    intercept), reading the one-hot groups of the prefix's encoder."""
    defaults = dict(
        sigma=0.5,
        lam=0.05,
        data_norm=3.0,
        penalize_intercept=True,
        onehot_groups="auto",
        delta=1e-3,
        random_state=0,
    )
    return OutputPerturbedLogisticRegression(**{**defaults, **params})


@pytest.fixture(scope="module")
def compas_pipeline():
    X, y = compas(n=200)
    return Pipeline([("ct", compas_columns()), ("clf", _private_glm())]).fit(X, y), X, y


def _assert_same_epsilon_audit(a, b):
    pd.testing.assert_frame_equal(a.audit_report_, b.audit_report_)
    pd.testing.assert_frame_equal(a.scores_, b.scores_)
    np.testing.assert_array_equal(a.direction_, b.direction_)
    assert a.threshold_ == b.threshold_ and a.positive_ == b.positive_
    assert a.guarantee_ == b.guarantee_


def test_epsilon_audit_of_a_compas_pipeline_equals_the_audit_by_hand(compas_pipeline):
    pipe, X, y = compas_pipeline
    audit = EpsilonAudit(pipe, n_releases=40, random_state=0).fit(X, y)
    Xt = pipe[:-1].transform(X)
    by_hand = EpsilonAudit(pipe[-1], n_releases=40, random_state=0).fit(Xt, y)
    _assert_same_epsilon_audit(audit, by_hand)
    assert audit.audit_report_.index.tolist() == ["OutputPerturbedLogisticRegression"]
    assert audit.epsilon_lower_ <= audit.epsilon_claimed_
    # the prefix is frozen: the pipeline's fitted transformer is the one used
    assert audit.estimator[0] is pipe[0]


def test_epsilon_audit_of_a_scaler_pipeline_on_user_neighbours():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    pipe = make_pipeline(StandardScaler(), _private_glm(onehot_groups=None))
    pipe.fit(X, y)
    X1 = X.copy()
    X1[3] = X[7]
    audit = EpsilonAudit(pipe, n_releases=40, random_state=1).fit(X, y, X1, y)
    scale = pipe[0]
    by_hand = EpsilonAudit(pipe[-1], n_releases=40, random_state=1).fit(
        scale.transform(X), y, scale.transform(X1), y
    )
    _assert_same_epsilon_audit(audit, by_hand)
    # FrozenEstimator keeps the prefix fitted through clone
    frozen = Pipeline([("scale", FrozenEstimator(scale)), ("clf", pipe[-1])])
    cloned = clone(EpsilonAudit(frozen, n_releases=40, random_state=1))
    _assert_same_epsilon_audit(cloned.fit(X, y, X1, y), by_hand)


def test_canary_of_onehot_groups_found_by_auto(compas_pipeline):
    pipe, X, y = compas_pipeline
    Xt = pipe[:-1].transform(X)
    X0, _, _, _ = canary_neighbours(pipe[-1], Xt, y)
    groups = pipe[-1].release().get_params()["onehot_groups"]
    onehot = np.concatenate([np.asarray(cols) for cols in groups.values()])
    free = np.setdiff1d(np.arange(Xt.shape[1]), onehot)
    # the canary keeps row 0's levels and puts its free features at the norm
    # data_norm leaves beside them: each group's level adds 1 to the squared norm
    np.testing.assert_array_equal(X0[0, onehot], Xt[0, onehot])
    np.testing.assert_allclose(
        np.linalg.norm(X0[0, free]), np.sqrt(3.0**2 - len(groups)), rtol=1e-12
    )
    assert np.linalg.norm(X0[0]) == pytest.approx(3.0, rel=1e-12)
    np.testing.assert_array_equal(X0[1:], Xt[1:])
    with pytest.raises(TypeError, match=r"pipe\[-1\]"):
        canary_neighbours(pipe, X, y)


class _Spy(TransformerMixin, BaseEstimator):
    """A fitted identity transformer that counts its transforms."""

    def fit(self, X, y=None):
        self.n_transforms_ = 0
        return self

    def transform(self, X):
        self.n_transforms_ += 1
        return np.asarray(X, dtype=np.float64)


@pytest.mark.parametrize("audit", [EpsilonAudit, IntrinsicPrivacyAudit])
def test_a_final_step_the_audit_cannot_audit_is_refused_before_any_work(audit):
    X, y = make_classification(
        n_samples=40, n_features=3, n_informative=2, n_redundant=0, random_state=0
    )
    spy = _Spy().fit(X)
    final = LogisticRegression() if audit is EpsilonAudit else StandardScaler()
    with pytest.raises(TypeError, match="final step is"):
        audit(Pipeline([("spy", spy), ("model", final)])).fit(X, y)
    assert spy.n_transforms_ == 0
    with pytest.raises(NotFittedError, match=r"prefix frozen.*'standardscaler'"):
        final = _private_glm() if audit is EpsilonAudit else SGDClassifier()
        audit(make_pipeline(StandardScaler(), final)).fit(X, y)
    assert spy.n_transforms_ == 0


def _sgd():
    return SGDClassifier(
        loss="log_loss", learning_rate="constant", eta0=0.5, max_iter=3, tol=None
    )


@pytest.mark.filterwarnings("ignore::sklearn_fil.exceptions.CalibrationRangeWarning")
def test_intrinsic_audit_of_a_pipeline_equals_the_audit_by_hand():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    pipe = make_pipeline(StandardScaler(), _sgd()).fit(X[:80], y[:80])
    params = dict(n_seeds=4, n_neighbours=3, random_state=0)
    audit = IntrinsicPrivacyAudit(pipe, **params)
    audit.fit(X[:80], y[:80], X_holdout=X[80:], y_holdout=y[80:])
    scale = pipe[0]
    by_hand = IntrinsicPrivacyAudit(pipe[-1], **params).fit(
        scale.transform(X[:80]),
        y[:80],
        X_holdout=scale.transform(X[80:]),
        y_holdout=y[80:],
    )
    np.testing.assert_array_equal(audit.weights_, by_hand.weights_)
    pd.testing.assert_frame_equal(audit.audit_report_, by_hand.audit_report_)
    pd.testing.assert_frame_equal(audit.membership_, by_hand.membership_)
    assert audit.sensitivity_bound_ == by_hand.sensitivity_bound_
    # the audit's input is the raw table
    assert audit.n_features_in_ == 4 and list(audit.feature_names_in_) == list("abcd")
