# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""Meta-estimators that read only the weights skip the report's extra columns.

The settings of ``UNREAD_REPORT`` must change nothing but those columns: the
weights and the guarantee are the same to the bit, for every estimator that
takes them. The audits set them on every release they fit."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.datasets import make_classification

from sklearn_fil import DPSGDClassifier, OutputPerturbedLogisticRegression
from sklearn_fil.audit import EpsilonAudit, IntrinsicPrivacyAudit
from sklearn_fil.utils._fitted import UNREAD_REPORT, unread_report_params
from sklearn_fil.utils._weights import flatten_weights


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


ESTIMATORS = [
    OutputPerturbedLogisticRegression(target_epsilon=1.0, data_norm=1.0),
    OutputPerturbedLogisticRegression(sigma=0.5, lam=0.1, data_norm=1.0),
    DPSGDClassifier(batch_size=16, max_iter=2, sampling="poisson"),
    DPSGDClassifier(hidden_layer_sizes=(3,), batch_size=16, max_iter=2),
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_unread_settings_change_only_the_report(data, estimator):
    settings = unread_report_params(estimator)
    assert settings and set(settings) <= set(UNREAD_REPORT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = clone(estimator).set_params(random_state=3).fit(*data)
        lean = clone(estimator).set_params(random_state=3, **settings).fit(*data)
    np.testing.assert_array_equal(flatten_weights(lean), flatten_weights(full))
    assert lean.guarantee_ == full.guarantee_
    # and they do skip work: a column of the full report is missing
    assert set(lean.privacy_report_.columns) != set(full.privacy_report_.columns)


_SEEN = []  # per_instance_accounting of every _Spy fit, in this process


class _Spy(OutputPerturbedLogisticRegression):
    def fit(self, X, y, sample_weight=None):
        _SEEN.append(self.per_instance_accounting)
        return super().fit(X, y, sample_weight)


def test_epsilon_audit_fits_without_unread_columns(data):
    _SEEN.clear()
    spy = _Spy(sigma=0.5, lam=0.1, data_norm=1.0, fit_intercept=False, delta=0.01)
    audit = EpsilonAudit(spy, n_releases=20, random_state=0).fit(*data)
    assert _SEEN and set(_SEEN) == {False}
    assert spy.per_instance_accounting == "auto"  # the user's estimator untouched
    # the same audit of the same mechanism, whichever setting it was given
    plain = OutputPerturbedLogisticRegression(**spy.get_params())
    again = EpsilonAudit(plain, n_releases=20, random_state=0).fit(*data)
    assert again.epsilon_lower_ == audit.epsilon_lower_


def test_intrinsic_audit_fits_without_unread_columns(data):
    X, y = data
    _SEEN.clear()
    spy = _Spy(sigma=0.5, lam=0.1, data_norm=1.0)
    IntrinsicPrivacyAudit(spy, n_seeds=3, n_neighbours=2, random_state=0).fit(X, y)
    assert _SEEN and set(_SEEN) == {False}


# --------------------------------------------------------------------------
# a fit defers the exact leave-one-out columns until the report is read


def _deferred(X, y, **params):
    params = {"data_norm": 1.0, "random_state": 0, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = OutputPerturbedLogisticRegression(**params).fit(X, y)
    return model


def test_deferred_report_is_the_report_of_the_fit(data):
    """Read late, after the caller's rows and the parameters changed, the
    report is the one of the data and the settings fitted: the same to the
    bit as the report read at once."""
    X, y = data
    at_once = _deferred(X, y)
    at_once.privacy_report_  # noqa: B018
    X_late, y_late = X.copy(), y.copy()
    late = _deferred(X_late, y_late)
    assert "_report_pending" in vars(late)  # else this test tests nothing
    X_late[:] = 0.0
    y_late[:] = 1 - y_late
    late.set_params(lam=1.0, fit_intercept=False)
    pd.testing.assert_frame_equal(late.privacy_report_, at_once.privacy_report_)
    assert late.privacy_report_.attrs == at_once.privacy_report_.attrs
    assert "_report_pending" not in vars(late)  # computed once


def test_pickle_holds_the_report_not_the_rows(data):
    X, y = data
    model = _deferred(X, y)
    expected = _deferred(X, y).privacy_report_
    restored = pickle.loads(pickle.dumps(model))
    assert not {"_report_pending"} & (set(vars(model)) | set(vars(restored)))
    pd.testing.assert_frame_equal(restored.privacy_report_, expected)


def test_refit_and_release_drop_the_pending_report(data):
    X, y = data
    model = _deferred(X, y)
    assert "_report_pending" not in vars(model.release())
    with pytest.raises(ValueError):
        model.fit(X, np.full(y.shape, 7.0))  # a regression target: refused
    assert not hasattr(model, "privacy_report_")
    assert "_report_pending" not in vars(model)
