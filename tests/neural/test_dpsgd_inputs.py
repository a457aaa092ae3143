# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier's inputs as the GLMs take them, and bad ones refused.

Sparse X, ``onehot_groups="auto"`` and a private label by default, as in the
GLMs; inputs whose results would be NaN, a hang or a generic crash are clear
errors before any work (issue 30, items 5 and 11 to 13).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from scipy import sparse
from sklearn.preprocessing import OneHotEncoder
from sklearn.utils._param_validation import InvalidParameterError

from sklearn_fil.exceptions import UtilityWarning
from sklearn_fil.neural import DPSGDClassifier, _dpsgd, _training


def _data(n=120, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.3
    return X, (X[:, 0] > 0).astype(int)


def _categorical(n=60, seed=0):
    """A CSR one-hot encoding of two columns of 4 levels, and a label."""
    levels = np.random.default_rng(seed).integers(0, 4, size=(n, 2))
    X = OneHotEncoder().fit_transform(levels)
    return X, (levels[:, 0] > 1).astype(int)


@pytest.mark.parametrize("hidden", [(), (3,)])
@pytest.mark.parametrize(
    "params",
    [{}, {"onehot_groups": "auto"}, {"fil_coordinates": 3}],
    ids=["full", "auto-groups", "sampled-coordinates"],
)
def test_sparse_x_trains_as_its_dense_copy(hidden, params):
    X, y = _categorical()
    assert sparse.issparse(X)
    est = dict(batch_size=10, max_iter=2, hidden_layer_sizes=hidden, random_state=0)
    a = DPSGDClassifier(**est, **params).fit(X, y)
    b = DPSGDClassifier(**est, **params).fit(X.toarray(), y)
    for wa, wb in zip(a.coefs_ + a.intercepts_, b.coefs_ + b.intercepts_, strict=True):
        assert_allclose(wa, wb, rtol=1e-12, atol=1e-15)
    pd.testing.assert_frame_equal(
        a.privacy_report_, b.privacy_report_, check_exact=False, rtol=1e-10
    )
    assert a.guarantee_ == b.guarantee_
    assert_allclose(a.predict_proba(X), b.predict_proba(X.toarray()), rtol=1e-12)
    assert_array_equal(a.release().predict(X), b.predict(X))


def test_sparse_x_on_the_gpu_is_refused_before_any_work():
    pytest.importorskip("cupy")
    X, y = _categorical()
    with pytest.raises(ValueError, match=r"X.toarray\(\)"):
        DPSGDClassifier(batch_size=10, backend="cupy").fit(X, y)


def test_onehot_groups_auto_is_the_detected_layout_declared_public():
    X, y = _categorical()
    names = [f"c{j}_{k}" for j in range(2) for k in range(4)]
    frame = pd.DataFrame(X.toarray(), columns=names)
    est = dict(batch_size=10, max_iter=2, random_state=0)
    auto = DPSGDClassifier(**est, onehot_groups="auto").fit(frame, y)
    groups = {"c0": names[:4], "c1": names[4:]}
    given = DPSGDClassifier(**est, onehot_groups=groups).fit(frame, y)
    pd.testing.assert_frame_equal(auto.privacy_report_, given.privacy_report_)
    assert auto.guarantee_.public == ("n_samples", "onehot_groups", "classes")
    assert given.guarantee_.public == ("n_samples", "classes")
    # the fit's groups are published with its parameters; get_params is the user's
    assert auto.release().get_params()["onehot_groups"] == groups
    assert auto.get_params()["onehot_groups"] == "auto"


def test_the_label_is_private_by_default_as_in_the_glms():
    X, y = _data()
    est = dict(batch_size=20, max_iter=1, random_state=0)
    report = DPSGDClassifier(**est).fit(X, pd.Series(y, name="t")).privacy_report_
    assert "fil[t]" in report
    features = DPSGDClassifier(**est, private_label=False).fit(X, y).privacy_report_
    assert "fil[y]" not in features
    assert (report["fil"] >= features["fil"]).all()


def _no_work(monkeypatch):
    """Make training and the noise calibration fail if they start."""

    def started(*args, **kwargs):
        raise AssertionError("work started")

    monkeypatch.setattr(_dpsgd, "NoisySGD", started)
    monkeypatch.setattr(_dpsgd, "dpsgd_noise_multiplier", started)


_HUGE_ROW = np.r_[_data()[0][:-1], [[1e200, 0.0]]]
_BAD = {
    "noise-1e300": ({"noise_multiplier": 1e300}, None, InvalidParameterError, "noise"),
    "noise-1e-300": ({"noise_multiplier": 1e-300}, None, ValueError, "below 0.001"),
    "clip-1e-300": ({"max_grad_norm": 1e-300}, None, InvalidParameterError, "max_"),
    "lr-1e300": ({"learning_rate": 1e300}, None, ValueError, "learning_rate <= 1e"),
    "target-1e-300": ({"target_epsilon": 1e-300}, None, InvalidParameterError, "targ"),
    "target-1e9": ({"target_epsilon": 1e9}, None, InvalidParameterError, "target"),
    "target-out-of-reach": (
        {"target_epsilon": 1e-6, "delta": 1e-12},
        None,
        ValueError,
        r"target_epsilon=1e-06 is below .* noise_multiplier=1e\+06",
    ),
    "public-n-1e9": (
        {"neighboring_relation": "add_remove", "public_n_samples": 10**9},
        None,
        ValueError,
        "would take 200000000 steps",
    ),
    "steps": ({"batch_size": 1, "max_iter": 10**5}, None, ValueError, "12000000 steps"),
    "x-1e300": ({}, np.full((120, 2), 1e300), ValueError, "entries up to 1e\\+300"),
    "row-1e200": ({}, _HUGE_ROW, ValueError, "set fil_accounting=False"),
}


@pytest.mark.parametrize("params, X, error, match", _BAD.values(), ids=_BAD)
@pytest.mark.filterwarnings("ignore:public_n_samples=.* is more than 10 times")
def test_bad_input_is_a_clear_error_before_any_work(
    params, X, error, match, monkeypatch
):
    X0, y = _data()
    clf = DPSGDClassifier(batch_size=10, max_iter=2, random_state=0).fit(X0, y)
    _no_work(monkeypatch)
    with pytest.raises(error, match=match):
        clf.set_params(**params).fit(X0 if X is None else X, y)
    assert not [a for a in vars(clf) if a.endswith("_")]


def test_a_public_n_far_from_the_data_warns_and_still_releases():
    # an error would make the release itself depend on the private n
    X, y = _data()
    clf = DPSGDClassifier(
        batch_size=10,
        max_iter=1,
        neighboring_relation="add_remove",
        public_n_samples=11 * len(X),
        random_state=0,
    )
    with pytest.warns(UserWarning, match="more than 10 times above"):
        clf.fit(X, y)
    assert clf.epsilon_ > 0


def test_a_tiny_target_epsilon_calibrates_within_the_noise_range():
    # issue 30: ZeroDivisionError after seconds; the accountant's epsilon is
    # 0 at the noise found, where no secant step is defined
    X, y = _data(30)
    clf = DPSGDClassifier(batch_size=10, max_iter=2, target_epsilon=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", UtilityWarning)  # at ε = 1e-6, rightly
        clf.fit(X, y)
    assert clf.epsilon_ <= 1e-6
    assert 1e-3 <= clf.noise_multiplier_ <= 1e6
    assert np.isfinite(clf.privacy_report_[["fil", "dfil", "epsilon"]].to_numpy()).all()


def test_a_non_finite_fisher_information_is_an_error_not_a_report(monkeypatch):
    # The checks before the fit make this rare; should a FIL column still come
    # out NaN, no report with an epsilon beside it is published.
    X, y = _data()
    result = _training.FILAccumulator.result

    def nan_row(self, n_outputs):
        out = result(self, n_outputs)
        out["fil"][7] = np.nan
        return out

    monkeypatch.setattr(_training.FILAccumulator, "result", nan_row)
    clf = DPSGDClassifier(batch_size=20, max_iter=1, random_state=0)
    with pytest.raises(ValueError, match=r"\(fil\) of 1 examples is not finite"):
        clf.fit(X, y)
    assert not [a for a in vars(clf) if a.endswith("_")]


def test_non_finite_weights_are_an_error(monkeypatch):
    X, y = _data()
    epochs = DPSGDClassifier._epochs

    def diverged(self, net, *args):
        recorder = epochs(self, net, *args)
        net.coefs[0][0, 0] = np.inf
        return recorder

    monkeypatch.setattr(DPSGDClassifier, "_epochs", diverged)
    clf = DPSGDClassifier(batch_size=20, max_iter=1, fil_accounting=False)
    with pytest.raises(ValueError, match="weights are not finite"):
        clf.fit(X, y)
    assert not [a for a in vars(clf) if a.endswith("_")]
