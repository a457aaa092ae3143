# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""DPSGDClassifier.release(): every field but the noised weights is public.

Fitting neighbouring data sets with the same seed must give releases that
differ only in the weights' values (issue 30): the label set is given in
advance (``classes``) or declared public, and delta, the noise multiplier and
every string of the guarantee come from public values only.
"""

import numpy as np
import pandas as pd
import pytest

from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.utils._labels import LABEL_SET
from sklearn_fil.utils.estimator_checks import assert_same_release


def _data(n, d=2, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 0.3
    return X, np.arange(n) % classes


def _onehot(n, seed=0):
    """A continuous feature, then a one-hot block of 3 levels."""
    X, y = _data(n, d=1, seed=seed)
    levels = np.arange(n) % 3
    return np.hstack([X, np.eye(3)[levels]]), y


REPLACE_ONE = {
    "logistic": ({}, 2),
    "mlp-3-classes": ({"hidden_layer_sizes": (3,)}, 3),
    "target-epsilon": ({"target_epsilon": 2.0}, 2),
    "shuffle": ({"sampling": "shuffle", "clipping": "hard"}, 2),
    "onehot-auto": ({"onehot_groups": "auto"}, 2),
    "no-fil": ({"fil_accounting": False, "per_instance_accounting": False}, 2),
}


@pytest.mark.parametrize("params, n_classes", REPLACE_ONE.values(), ids=REPLACE_ONE)
def test_replace_one_neighbours_give_the_same_release_fields(params, n_classes):
    # The replaced example is the only one of the last class: its features
    # and its label change, so a label set read from y would differ.
    n = 40
    make = _onehot if params.get("onehot_groups") else _data
    X, _ = make(n)
    y = np.zeros(n, dtype=int)
    y[: n // 2] = 1
    y[-1] = n_classes - 1
    X2, y2 = X.copy(), y.copy()
    X2[-1, 0] = -3.0 * X[-1, 0] + 0.1  # a one-hot block keeps its layout
    y2[-1] = 0
    labels = list(range(n_classes))
    est = dict(batch_size=8, max_iter=2, classes=labels, random_state=0)
    a = DPSGDClassifier(**est, **params).fit(X, y)
    b = DPSGDClassifier(**est, **params).fit(X2, y2)
    assert a.guarantee_.holds
    assert LABEL_SET not in a.guarantee_.public
    assert a.coefs_[-1].shape[1] == (1 if n_classes == 2 else n_classes)
    assert_same_release(a, b)


ADD_REMOVE = {
    "default": {},
    "target-epsilon": {"target_epsilon": 2.0},
}


@pytest.mark.parametrize("params", ADD_REMOVE.values(), ids=ADD_REMOVE)
def test_add_remove_neighbours_give_the_same_release_fields(params):
    # Above 10^4 examples the default delta min(1e-5, 1 / (10 n)) depends on
    # n: it (and with it epsilon_ and a calibrated noise) must come from
    # public_n_samples. The added example is the only one of its class.
    n = 20000
    X, _ = _data(n + 1)
    y = np.zeros(n + 1, dtype=int)
    y[: n // 2] = 1
    y[-1] = 2
    est = dict(
        batch_size=2000,
        max_iter=1,
        neighboring_relation="add_remove",
        public_n_samples=n,
        accountant="rdp",
        classes=[0, 1, 2],
        fil_accounting=False,
        per_instance_accounting=False,
        random_state=0,
    )
    a = DPSGDClassifier(**est, **params).fit(X[:n], y[:n])
    b = DPSGDClassifier(**est, **params).fit(X, y)
    assert a.delta_ == 1 / (10 * n)
    assert_same_release(a, b)


def test_issue_reproduction_label_set_given_or_declared():
    # issue 30: relabelling the only "2" changed classes_ and the last layer
    n = 30
    X, _ = _data(n)
    y = np.r_[np.zeros(n - 2, int), 1, 2]
    y2 = y.copy()
    y2[-1] = 1
    est = dict(batch_size=10, max_iter=1, random_state=0)
    given = [DPSGDClassifier(**est, classes=[0, 1, 2]).fit(X, t) for t in (y, y2)]
    assert [g.release().coefs_[0].shape for g in given] == [(2, 3), (2, 3)]
    assert_same_release(*given)
    # read from the data, the label set is what the guarantee assumes public
    read = DPSGDClassifier(**est).fit(X, y2)
    np.testing.assert_array_equal(read.classes_, [0, 1])
    assert read.guarantee_.public == ("n_samples", LABEL_SET)
    assert read.release().guarantee_.public == ("n_samples", LABEL_SET)


def test_given_classes_fix_the_output_layer_and_refuse_other_labels():
    X, y = _data(30)
    clf = DPSGDClassifier(batch_size=10, max_iter=1, classes=["a", "b", "c"])
    clf.fit(X, np.where(y == 1, "b", "a"))  # "c" never occurs: its unit stays
    assert clf.coefs_[-1].shape == (2, 3)
    assert clf.predict_proba(X).shape == (30, 3)
    np.testing.assert_array_equal(clf.release().classes_, ["a", "b", "c"])
    # one class present of two given: still the binary model
    binary = DPSGDClassifier(batch_size=10, max_iter=1, classes=[0, 1])
    assert binary.fit(X, np.zeros(30, int)).coefs_[-1].shape == (2, 1)
    with pytest.raises(ValueError, match=r"labels outside classes=\['a', 'b'\]"):
        clf.set_params(classes=["a", "b"]).fit(X, np.where(y == 1, "c", "a"))
    assert not [a for a in vars(clf) if a.endswith("_")]
    with pytest.raises(ValueError, match="at least 2 classes; the classes parameter"):
        clf.set_params(classes=["a"]).fit(X, np.full(30, "a"))


def test_missing_label_is_named_before_any_work():
    X, y = _data(30)
    y = pd.Series(y, dtype=object, name="outcome")
    y.iloc[[3, 8]] = None
    with pytest.raises(ValueError, match=r"Input y \(the target\).* rows 3, 8"):
        DPSGDClassifier(batch_size=10).fit(X, y)


def test_add_remove_default_delta_comes_from_public_n_samples():
    X, y = _data(15000)
    clf = DPSGDClassifier(
        batch_size=1000,
        max_iter=1,
        neighboring_relation="add_remove",
        public_n_samples=20000,
        accountant="rdp",
        fil_accounting=False,
        per_instance_accounting=False,
        random_state=0,
    ).fit(X, y)
    assert clf.delta_ == 1 / 200000  # not 1 / 150000
