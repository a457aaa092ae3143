"""``privacy_report_.attrs`` and the CSV + JSON export that keeps it."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.datasets import make_classification, make_regression

import sklearn_fil
from sklearn_fil.linear_model import (
    IRFILRegressor,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.report_io import (
    privacy_report_metadata,
    read_privacy_report,
    sidecar_path,
    write_privacy_report,
)


def _logistic():
    X, y = make_classification(n_samples=120, n_features=4, random_state=0)
    X = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    return OutputPerturbedLogisticRegression(
        data_norm=3.0, penalize_intercept=True, lam=0.05, random_state=0
    ).fit(X, pd.Series(y, name="label"))


def test_attrs_hold_settings_and_guarantee():
    clf = _logistic()
    attrs = clf.privacy_report_.attrs
    assert attrs == privacy_report_metadata(clf)
    assert attrs["epsilon"] == clf.epsilon_ and attrs["delta"] == clf.delta_
    assert attrs["neighboring_relation"] == clf.guarantee_.neighboring_relation
    assert attrs["public"] == list(clf.guarantee_.public)
    assert attrs["n"] == 120 and attrs["sigma"] == clf.sigma_
    assert attrs["dataset_fil"] == clf.dataset_fil_
    assert attrs["estimator"] == "OutputPerturbedLogisticRegression"
    assert attrs["estimator_params"]["data_norm"] == 3.0
    assert attrs["estimator_params"]["lam"] == 0.05
    assert attrs["sklearn_fil_version"] == sklearn_fil.__version__
    assert attrs["no_guarantee_reason"] is None
    json.dumps(attrs, allow_nan=False)  # JSON-safe as it is


def test_attrs_without_guarantee_give_the_reason():
    X, y = make_regression(n_samples=40, n_features=3, random_state=0)
    reg = OutputPerturbedLinearRegression(random_state=0).fit(X, y)
    attrs = reg.privacy_report_.attrs
    assert attrs["epsilon"] is None and attrs["neighboring_relation"] is None
    assert attrs["no_guarantee_reason"] == reg.guarantee_.reason
    irfil = IRFILRegressor(n_iter=2, random_state=0)
    with pytest.warns(Warning):
        irfil.fit(X, y)
    assert irfil.privacy_report_.attrs["estimator"] == "IRFILRegressor"


def test_write_and_read_round_trip(tmp_path):
    clf = _logistic()
    csv, sidecar = write_privacy_report(clf, tmp_path / "report.csv")
    assert sidecar == sidecar_path(csv) == tmp_path / "report.json"
    meta = json.loads(sidecar.read_text(encoding="utf-8"))
    for key in ("epsilon", "delta", "neighboring_relation", "n", "estimator_params"):
        assert meta[key] == clf.privacy_report_.attrs[key]
    back = read_privacy_report(csv)
    assert back.attrs == clf.privacy_report_.attrs
    expected = clf.privacy_report_.rename_axis("sample")
    pd.testing.assert_frame_equal(back, expected, check_exact=False, rtol=1e-15)
    np.testing.assert_array_equal(back.columns, clf.privacy_report_.columns)


def test_write_refuses_a_json_name(tmp_path):
    with pytest.raises(ValueError, match="sidecar JSON"):
        write_privacy_report(_logistic(), tmp_path / "report.json")
