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


# A report CSV as write_privacy_report writes it, small enough to edit.
_CSV = "sample,fil,dfil,mse_bound,fil[a]\n0,0.5,0.25,16.0,0.1\n1,1.5,0.75,inf,\n"


@pytest.fixture(scope="module")
def metadata():
    return privacy_report_metadata(_logistic())


def _write_report(tmp_path, csv=_CSV, sidecar=None):
    """Write ``csv`` (and ``sidecar``, text or bytes) as a report; the CSV path."""
    path = tmp_path / "report.csv"
    for file, content in ((path, csv), (sidecar_path(path), sidecar)):
        if isinstance(content, bytes):
            file.write_bytes(content)
        elif content is not None:
            file.write_text(content, encoding="utf-8")
    return path


def _read_error(path, match):
    """The ValueError (no other type) reading ``path`` raises, naming its file."""
    with pytest.raises(ValueError, match=match) as error:
        read_privacy_report(path)
    assert type(error.value) is ValueError
    return str(error.value)


def test_read_converts_numbers_to_float64(tmp_path):
    """Integer columns become float64; inf and empty cells read as inf and NaN."""
    csv = "sample,fil,dfil,mse_bound\n0,1,2,inf\n1,3,4,\n"
    report = read_privacy_report(_write_report(tmp_path, csv))
    assert (report.dtypes == np.float64).all()
    np.testing.assert_array_equal(report["fil"], [1.0, 3.0])
    assert np.isinf(report["mse_bound"][0]) and np.isnan(report["mse_bound"][1])


@pytest.mark.parametrize(
    "csv, match",
    [
        pytest.param(
            _CSV.replace("0.5", "abc"),
            r"Column 'fil' of .*report\.csv.*'abc'",
            id="string",
        ),
        pytest.param(
            _CSV.replace("0.1", "low"), r"Column 'fil\[a\]' of .*'low'", id="attribute"
        ),
        pytest.param(
            _CSV.replace("16.0", "True").replace("inf", "False"),
            "'mse_bound'.*True",
            id="bool",
        ),
        pytest.param(
            _CSV.replace(",dfil", "").replace(",0.25", "").replace(",0.75", ""),
            "report.csv is not a privacy report CSV: it has no column dfil",
            id="missing",
        ),
        pytest.param("sample\n0\n", "no column fil, dfil, mse_bound", id="index-only"),
        pytest.param("", "report.csv is not a privacy report CSV", id="empty"),
        pytest.param(
            _CSV + "2,1,2,3,4,5,6\n", "report.csv is not a privacy report", id="ragged"
        ),
        pytest.param(
            _CSV.encode() + b"2,\xff,1,1,1\n", "report.csv is not .*utf-8", id="utf8"
        ),
    ],
)
def test_read_refuses_a_hostile_csv(tmp_path, csv, match):
    _read_error(_write_report(tmp_path, csv), match)


@pytest.mark.parametrize(
    "sidecar, match",
    [
        pytest.param(b'{"estimator": "\xff"}', "utf-8", id="utf8"),
        pytest.param('{"epsilon": 1', "Expecting", id="truncated"),
        pytest.param("not json", "Expecting value", id="not-json"),
        pytest.param("[" * 100_000 + "]" * 100_000, "nested too deeply", id="deep"),
        pytest.param(
            '{"epsilon": 1, "epsilon": 1e9}', "'epsilon' appears twice", id="twice"
        ),
        pytest.param(
            '{"estimator_params": {"lam": 1, "lam": 2}}',
            "'lam' appears twice",
            id="nested-twice",
        ),
        pytest.param('{"epsilon": NaN}', "NaN is no JSON number", id="nan"),
        pytest.param(
            '{"dataset_fil": -Infinity}', "-Infinity is no JSON number", id="inf"
        ),
        pytest.param('{"sigma": 1e400}', "1e400 is out of range", id="overflow"),
        pytest.param('{"n": 1' + "0" * 5000 + "}", "digits", id="long-int"),
        pytest.param("[1, 2]", r"holds \[1, 2\], not a JSON object", id="list"),
        pytest.param("null", "holds None, not a JSON object", id="null"),
    ],
)
def test_read_refuses_a_hostile_sidecar(tmp_path, sidecar, match):
    message = _read_error(_write_report(tmp_path, sidecar=sidecar), match)
    assert "report.json is not the sidecar JSON of a privacy report" in message


@pytest.mark.parametrize(
    "key, value, wanted",
    [
        ("epsilon", "1", "a non-negative number or null"),
        ("epsilon", -1, "a non-negative number or null"),
        ("epsilon", True, "a non-negative number or null"),
        ("sigma", {}, "a non-negative number or null"),
        ("dataset_fil", [1.0], "a non-negative number or null"),
        ("delta", 1.5, r"a number in \[0, 1\) or null"),
        ("n", 1.5, "a non-negative integer"),
        ("n", -1, "a non-negative integer"),
        ("n_clipped", False, "a non-negative integer"),
        ("neighboring_relation", "anyone", '"replace_one", "add_remove" or null'),
        ("public", "n_samples", "a list of strings or null"),
        ("public", [1], "a list of strings or null"),
        ("estimator_params", [], "an object"),
        ("estimator", None, "a string"),
        ("no_guarantee_reason", 3, "a string or null"),
        ("sensitive", None, "a string"),
        ("sklearn_fil_version", 1.0, "a string"),
    ],
)
def test_read_refuses_a_sidecar_field_of_the_wrong_type(
    tmp_path, metadata, key, value, wanted
):
    sidecar = json.dumps(metadata | {key: value})
    message = _read_error(_write_report(tmp_path, sidecar=sidecar), wanted)
    assert f"report.json is not the sidecar JSON of a privacy report: its {key!r}" in (
        message
    )


def test_read_keeps_a_valid_sidecar_and_unknown_keys(tmp_path, metadata):
    """The metadata as written, keys the command adds (any type) kept as read."""
    extra = {"model": "logistic", "fit": {"accuracy": 0.9}, "notes": []}
    path = _write_report(tmp_path, sidecar=json.dumps(metadata | extra))
    assert read_privacy_report(path).attrs == metadata | extra
