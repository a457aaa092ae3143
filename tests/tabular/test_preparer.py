# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""TablePreparer and read_raw_csv: the raw-table preparation of the CLI."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from numpydoc.validate import validate
from sklearn.base import clone
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.tabular import TablePreparer, read_raw_csv
from sklearn_fil.tabular._leaks import threshold_share
from tests._tables import UNINFORMATIVE_REASONS, mixed_frame, uninformative_frame


def _mixed_frame(n=80, seed=0):
    """The mixed table's features, and its label."""
    frame = mixed_frame(n, seed)
    return frame.drop(columns="y"), frame["y"]


def test_mixed_types_are_imputed_scaled_and_one_hot_encoded():
    X, y = _mixed_frame()
    prep = TablePreparer()
    out = prep.fit_transform(X, y)
    numbers = X[["age", "income"]].assign(
        score=pd.to_numeric(X["score"], errors="coerce")
    )
    scaled = StandardScaler().fit_transform(
        SimpleImputer(strategy="median").fit_transform(numbers)
    )
    assert_allclose(out[["age", "income", "score"]].to_numpy(), scaled)
    colour = X["colour"].fillna(X["colour"].mode()[0])
    for level in ("blue", "green", "red"):
        assert_allclose(out[f"colour={level}"], (colour == level).astype(float))
    assert list(out.columns) == list(prep.get_feature_names_out())
    assert prep.onehot_groups_ == {
        "colour": ["colour=blue", "colour=green", "colour=red"],
        "member": ["member=False", "member=True"],
    }
    assert prep.notes_ == {
        "score": "'score' is numeric: 3 non-numeric entries ('?') read as missing"
    }
    assert prep.dropped_columns_ == {} and prep.target_leaks_ == {}
    features = prep.features_
    assert features.index.tolist() == ["age", "income", "score", "colour", "member"]
    assert features["kind"].tolist() == ["numeric"] * 3 + ["categorical"] * 2
    assert features["n_missing"].tolist() == [5, 0, 3, 7, 0]
    assert features["n_levels"].isna().tolist() == [True] * 3 + [False] * 2
    assert features.loc["colour", "n_levels"] == 3
    # transform repeats the fitted preparation
    assert_allclose(prep.transform(X).to_numpy(), out.to_numpy())


def test_transform_of_new_rows_uses_the_fitted_statistics():
    X, y = _mixed_frame()
    prep = TablePreparer().fit(X, y)
    new = X.head(3).copy()
    new.loc[0, "colour"] = "purple"  # unseen: all zeros
    new.loc[1, "score"] = "n/a"  # read as missing: the fitted median
    out = prep.transform(new)
    assert out.shape == (3, len(prep.get_feature_names_out()))
    assert out.loc[0, ["colour=blue", "colour=green", "colour=red"]].sum() == 0
    full = prep.transform(X)
    assert_allclose(out.loc[2].to_numpy(), full.loc[2].to_numpy())
    with pytest.raises(ValueError, match="lacks the fitted column"):
        prep.transform(X.drop(columns="age"))


def test_identifiers_are_dropped_with_their_reason():
    X, _ = _mixed_frame()
    X.insert(0, "Unnamed: 0", np.arange(len(X)))
    X.insert(1, "id", np.arange(1000, 1000 + len(X)))
    X["PatientID"] = [f"P{i:04d}" for i in range(len(X))]
    X["site_id"] = np.arange(len(X)) % 4  # an ID-like name, not distinct
    prep = TablePreparer().fit(X)
    assert prep.dropped_columns_ == {
        "Unnamed: 0": "no name in the header and distinct in every row (a saved "
        "row index)",
        "id": "named like an identifier and distinct in every row",
        "PatientID": "named like an identifier and distinct in every row",
    }
    assert "site_id" in prep.features_.index


def test_uninformative_columns_are_dropped_with_their_reason():
    prep = TablePreparer().fit(uninformative_frame())
    assert prep.dropped_columns_ == UNINFORMATIVE_REASONS
    assert prep.get_feature_names_out().tolist() == ["x"]


def test_dates_in_mixed_formats_or_with_a_few_bad_entries_are_dates():
    days = [f"2020-01-{d:02d}" for d in range(1, 29)]
    X = pd.DataFrame(
        {
            "mixed": days + [f"01/{d:02d}/2020" for d in range(1, 29)],
            "gaps": days * 2,
            "x": np.arange(56.0),
        }
    )
    X.loc[[3, 30], "gaps"] = "unknown"
    prep = TablePreparer().fit(X)
    assert prep.dropped_columns_ == {
        "mixed": "dates or times (e.g. '2020-01-01')",
        "gaps": "dates or times (e.g. '2020-01-01')",
    }


def test_datetime_and_category_dtypes_are_kept_as_they_are():
    # e.g. after skrub's Cleaner: datetimes are dates, categories categorical
    X = pd.DataFrame(
        {
            "when": pd.date_range("2020-01-01", periods=30),
            "x": np.arange(30.0),
            "code": pd.Categorical(["1", "2", "3"] * 10),
        }
    )
    prep = TablePreparer().fit(X)
    assert list(prep.dropped_columns_) == ["when"]
    assert prep.dropped_columns_["when"].startswith("dates or times")
    assert prep.notes_ == {}
    assert prep.onehot_groups_ == {"code": ["code=1", "code=2", "code=3"]}


def test_drop_keep_and_categorical():
    X, y = _mixed_frame()
    X["id"] = np.arange(len(X))
    X["region"] = np.arange(len(X)) % 3 + 1  # integer codes
    prep = TablePreparer(drop=["age", "income"], keep=["id"], categorical=["region"])
    prep.fit(X, y)
    assert prep.dropped_columns_ == {"age": "--drop", "income": "--drop"}
    assert prep.onehot_groups_["region"] == ["region=1", "region=2", "region=3"]
    assert "id" in prep.features_.index


def test_rare_levels_are_pooled():
    c = ["a"] * 10 + ["b"] * 8 + ["c"] * 5 + ["d"] * 3  # 4 levels, >= 5 rows each
    X = pd.DataFrame({"c": c, "x": np.arange(26.0)})
    prep = TablePreparer(max_levels=3).fit(X)
    assert prep.onehot_groups_ == {"c": ["c=a", "c=b", "c=(other)"]}
    assert prep.features_.loc["c", "n_levels"] == 4


def test_target_leak_is_flagged():
    X, y = _mixed_frame()
    X["outcome_code"] = y.map({"yes": "Y", "no": "N"})
    prep = TablePreparer().fit(X, y)
    assert prep.target_leaks_ == {"outcome_code": 1.0}
    # without a target, or with a target of three classes, nothing is flagged
    assert TablePreparer().fit(X).target_leaks_ == {}
    three = y.where(X["income"] < 90, "maybe")
    assert TablePreparer().fit(X, three).target_leaks_ == {}


def test_threshold_share_is_the_best_one_cut_rule():
    rng = np.random.default_rng(0)
    for n in rng.integers(2, 30, 100):
        values = rng.integers(0, 5, n).astype(float)
        values[rng.random(n) < 0.2] = np.nan
        labels, missing = rng.random(n) < 0.5, np.isnan(values)
        right = max(labels[missing].sum(), (~labels[missing]).sum())
        above = values[~missing] > np.r_[-np.inf, values[~missing]][:, None]
        hits = (above == labels[~missing]).sum(axis=1)
        right += max(hits.max(), (~missing).sum() - hits.min())
        assert threshold_share(pd.Series(values), labels) == pytest.approx(right / n)


@pytest.mark.parametrize(
    "params, X, error, message",
    [
        ({}, np.zeros((3, 2)), TypeError, "pandas DataFrame"),
        ({"drop": ["nope"]}, None, ValueError, "drop names no column of X: 'nope'"),
        ({"drop": ["age"], "keep": ["age"]}, None, ValueError, "both drop and keep"),
        ({"max_levels": 1}, None, ValueError, "max_levels"),
    ],
)
def test_bad_input_is_refused(params, X, error, message):
    X = _mixed_frame()[0] if X is None else X
    with pytest.raises(error, match=message):
        TablePreparer(**params).fit(X)


def test_every_column_dropped_is_refused():
    X = pd.DataFrame({"id": [1, 2, 3], "note": ["x", "x", "x"]})
    with pytest.raises(ValueError, match=r"no feature columns left.*'id'.*keep"):
        TablePreparer().fit(X)


def test_pipeline_measures_each_categorical_column_as_one_attribute():
    X, y = _mixed_frame()
    prep = TablePreparer().fit(X, y)
    est = OutputPerturbedLogisticRegression(
        sigma=0.1, onehot_groups=prep.onehot_groups_, random_state=0
    )
    pipe = make_pipeline(clone(prep), est).fit(X, y)
    direct = clone(est).fit(prep.transform(X), y)
    report = pipe[-1].privacy_report_
    assert [c for c in report.columns if c.startswith("fil[")] == [
        "fil[age]",
        "fil[income]",
        "fil[score]",
        "fil[colour]",
        "fil[member]",
        "fil[y]",
    ]
    assert_allclose(report.to_numpy(), direct.privacy_report_.to_numpy())
    assert pipe.predict(X.head()).shape == (5,)


def test_set_output_pandas_and_default_give_a_frame():
    X, y = _mixed_frame()
    for output in ("default", "pandas"):
        out = TablePreparer().set_output(transform=output).fit_transform(X, y)
        assert isinstance(out, pd.DataFrame)


@pytest.mark.parametrize("sep", [",", ";", "\t", "|"])
def test_read_raw_csv_sniffs_the_delimiter(tmp_path, sep):
    X, _ = _mixed_frame()
    path = tmp_path / "data.csv"
    X.to_csv(path, index=False, sep=sep)
    frame, found = read_raw_csv(path)
    assert found == sep
    assert frame.columns.tolist() == X.columns.tolist()
    # a wrong delimiter is used as given: the header is then one column
    wrong = ";" if sep != ";" else ","
    assert read_raw_csv(path, sep=wrong)[0].shape[1] == 1


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "it is empty"),
        (b"\xff\xfe\x00\x81", "NUL byte"),
        (b"a,b\n\xff\xfe,1\n", "not UTF-8"),
        ("a,b\n1,2\n1,2,3,4\n", "not a valid CSV"),
    ],
)
def test_read_raw_csv_refuses_what_is_not_csv_text(tmp_path, content, message):
    path = tmp_path / "data.csv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(ValueError, match=message):
        read_raw_csv(path)
    with pytest.raises(FileNotFoundError):
        read_raw_csv(tmp_path / "missing.csv")


# numpydoc validation, as tests/test_docstrings.py does for the other modules
CHECKS = {"GL08", "PR01", "PR02", "PR03", "PR07", "PR10", "RT01", "RT03", "SS01"}
NAMES = [
    "sklearn_fil.tabular.read_raw_csv",
    "sklearn_fil.tabular.TablePreparer",
    *(
        f"sklearn_fil.tabular.TablePreparer.{method}"
        for method in ("fit", "fit_transform", "transform", "get_feature_names_out")
    ),
]


@pytest.mark.parametrize("name", NAMES)
def test_docstring(name):
    bad = [f"{c}: {m}" for c, m in validate(name)["errors"] if c in CHECKS]
    assert not bad, "\n".join(bad)


def test_the_command_and_a_pipeline_give_the_same_report(tmp_path, capsys):
    from sklearn_fil.cli import main

    X, y = _mixed_frame()
    X["id"] = np.arange(len(X))
    csv, out = tmp_path / "data.csv", tmp_path / "r.csv"
    X.assign(y=y).to_csv(csv, index=False)
    assert main(["report", str(csv), "--target", "y", "--out", str(out)]) == 0
    capsys.readouterr()
    frame, _ = read_raw_csv(csv)
    X, y = frame.drop(columns="y"), frame["y"]
    prep = TablePreparer().fit(X, y)
    est = OutputPerturbedLogisticRegression(
        sigma=0.1, lam=0.01, onehot_groups=prep.onehot_groups_
    )
    expected = make_pipeline(prep, est).fit(X, y)[-1].privacy_report_
    report = pd.read_csv(out, index_col=0)
    assert report.columns.tolist() == expected.columns.tolist()
    assert_allclose(report.to_numpy(), expected.to_numpy(), rtol=1e-12)
