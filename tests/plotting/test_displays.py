# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The displays draw the data they are given: checked on the artists, not pixels."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.tree import DecisionTreeClassifier
from sklearn.utils import Bunch

from sklearn_fil import (
    IRFILClassifier,
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil.attacks import (
    GLMReconstructionAttack,
    LossThresholdMembershipInference,
    attack_report,
)
from sklearn_fil.exceptions import PrivacyLeakWarning
from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.plotting import (
    AttackSuccessDisplay,
    ExposedExamplesDisplay,
    FILHistogramDisplay,
    IRFILConvergenceDisplay,
    MembershipROCDisplay,
    MSEBoundDisplay,
    PerInstanceEpsilonDisplay,
    ReconstructionBoundDisplay,
)


@pytest.fixture
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=60, n_features=4, random_state=0)
    return X / np.linalg.norm(X, axis=1).max(), y


@pytest.fixture(scope="module")
def logistic(data):
    X, y = data
    return OutputPerturbedLogisticRegression(
        sigma=0.5, lam=0.1, fit_intercept=False, data_norm=1.0, random_state=0
    ).fit(X, y)


def _heights(bars):
    return np.array([patch.get_height() for patch in bars.patches])


def _offsets(collection):
    return np.asarray(collection.get_offsets())


# -- matplotlib is optional ------------------------------------------------------


def test_import_without_matplotlib_and_plot_names_the_extra():
    # one interpreter: the import loads no matplotlib, then with matplotlib
    # hidden every way of drawing names the extra that installs it
    code = """
import sys
import sklearn_fil.plotting as plotting
assert "matplotlib" not in sys.modules
sys.modules["matplotlib"] = None
import numpy as np
import pandas as pd

display = plotting.FILHistogramDisplay(values=np.arange(3.0))
for draw in (
    display.plot,
    lambda: plotting.FILHistogramDisplay.from_report(pd.DataFrame({"fil": [1.0]})),
    lambda: plotting.IRFILConvergenceDisplay(iteration=[0], std=[1.0]).plot(),
    lambda: plotting.ExposedExamplesDisplay(
        images=np.zeros((2, 1, 2, 2)), fil=np.ones((2, 1))
    ).plot(),
):
    try:
        draw()
    except ImportError as exc:
        assert "pip install sklearn-fil[plot]" in str(exc), exc
    else:
        raise AssertionError("no ImportError without matplotlib")
"""
    subprocess.run([sys.executable, "-c", code], check=True)


# -- FILHistogramDisplay ---------------------------------------------------------


def test_fil_histogram_bars_are_the_histogram_of_each_class(plt, logistic, data):
    _, y = data
    fil = logistic.privacy_report_["fil"].to_numpy()
    display = FILHistogramDisplay.from_estimator(
        logistic, groups=y, bins=12, show_mean=True
    )
    assert_allclose(display.bin_edges_, np.histogram_bin_edges(fil, bins=12))
    assert sorted(display.bars_) == [0, 1]
    for label in (0, 1):
        # grouped histograms are densities
        expected, _ = np.histogram(
            fil[y == label], bins=display.bin_edges_, density=True
        )
        assert_allclose(_heights(display.bars_[label]), expected, rtol=1e-12)
        assert_allclose(
            display.mean_lines_[label].get_xdata()[0], fil[y == label].mean()
        )
    assert display.figure_ is display.ax_.figure
    assert [t.get_text() for t in display.ax_.get_legend().get_texts()] == [
        f"{label} (n={np.sum(y == label)})" for label in (0, 1)
    ]
    assert display.ax_.get_ylabel() == "density"


def test_fil_histogram_log_bins_cover_every_value(plt, logistic):
    column = "fil[x1]"
    values = logistic.privacy_report_[column].to_numpy()
    _, ax = plt.subplots()
    display = FILHistogramDisplay.from_report(
        logistic.privacy_report_, column=column, log_scale=True, bins=8, ax=ax
    )
    edges = display.bin_edges_
    assert display.ax_ is ax and ax.get_xscale() == "log"
    assert edges[0] == values.min() and edges[-1] == values.max()
    assert_allclose(np.diff(np.log(edges)), np.log(edges[-1] / edges[0]) / 8)
    heights = _heights(display.bars_["all"])
    assert_array_equal(heights, np.histogram(values, bins=edges)[0])
    assert heights.sum() == values.size


def test_fil_histogram_leaves_out_non_finite_values_with_a_warning(plt):
    report = pd.DataFrame({"mse_bound": [1.0, 2.0, np.inf, 4.0]})
    with pytest.warns(UserWarning, match="1 of 4 values"):
        display = FILHistogramDisplay.from_report(report, column="mse_bound", bins=3)
    assert _heights(display.bars_["all"]).sum() == 3


def test_fil_histogram_bad_input(plt, logistic, data):
    _, y = data
    with pytest.raises(ValueError, match="no column 'fil\\[nope\\]'"):
        FILHistogramDisplay.from_estimator(logistic, column="fil[nope]")
    with pytest.raises(NotFittedError):
        FILHistogramDisplay.from_estimator(OutputPerturbedLogisticRegression())
    with pytest.raises(ValueError, match="released copy"):
        FILHistogramDisplay.from_estimator(logistic.release())
    with pytest.raises(ValueError, match="one value per example"):
        FILHistogramDisplay.from_estimator(logistic, groups=y[:-1])
    with pytest.raises(TypeError, match="DataFrame"):
        FILHistogramDisplay.from_report(np.ones(3))


# -- ExposedExamplesDisplay ------------------------------------------------------


def test_exposed_examples_are_the_extreme_rows_in_order(plt):
    rng = np.random.default_rng(0)
    X = rng.random((30, 16))
    y = (X[:, 0] > 0.5).astype(int)
    clf = OutputPerturbedLogisticRegression(lam=0.1, random_state=0).fit(X, y)
    fil = clf.privacy_report_["fil"].to_numpy()
    display = ExposedExamplesDisplay.from_estimator(clf, X, n=3)
    most, least = np.argsort(-fil)[:3], np.argsort(fil)[:3]
    assert display.axes_.shape == display.images_.shape == (2, 3)
    for k in range(3):
        assert_array_equal(display.images_[0, k].get_array(), X[most[k]].reshape(4, 4))
        assert_array_equal(display.images_[1, k].get_array(), X[least[k]].reshape(4, 4))
        assert display.axes_[0, k].get_title().endswith(f"{fil[most[k]]:.3g}")
    assert_allclose(display.fil, np.stack([fil[most], fil[least]]))
    # one colour scale for every tile
    assert {im.get_clim() for im in display.images_.ravel()} == {(X.min(), X.max())}


def test_exposed_examples_image_shape_and_axes(plt):
    X = np.arange(40.0).reshape(4, 10)
    report = pd.DataFrame({"fil": [3.0, 1.0, 4.0, 2.0]}, index=list("abcd"))
    with pytest.raises(ValueError, match="not a perfect square"):
        ExposedExamplesDisplay.from_report(report, X, n=2)
    with pytest.raises(ValueError, match="holds 9 pixels"):
        ExposedExamplesDisplay.from_report(report, X, n=2, image_shape=(3, 3))
    with pytest.raises(ValueError, match="more than the 4 examples"):
        ExposedExamplesDisplay.from_report(report, X, n=5, image_shape=(2, 5))
    with pytest.raises(ValueError, match="3 rows but the report has 4"):
        ExposedExamplesDisplay.from_report(report, X[:3], n=2, image_shape=(2, 5))
    fig, ax = plt.subplots()
    display = ExposedExamplesDisplay.from_report(
        report, X, n=2, image_shape=(2, 5), ax=ax
    )
    assert display.figure_ is fig and not ax.axison
    assert_array_equal(display.images_[0, 0].get_array(), X[2].reshape(2, 5))
    assert_array_equal(display.images_[1, 0].get_array(), X[1].reshape(2, 5))
    assert display.axes_[0, 1].get_title() == "#a\n3"


# -- IRFILConvergenceDisplay -----------------------------------------------------


def test_irfil_convergence_lines_are_the_history(plt, data):
    X, y = data
    est = IRFILClassifier(sigma=0.1, n_iter=3, tol=0, random_state=0).fit(X, y)
    history = est.fil_history_
    display = IRFILConvergenceDisplay.from_estimator(est)
    assert_array_equal(display.line_.get_xdata(), history["iteration"])
    assert_allclose(display.line_.get_ydata(), history["std"])
    assert_allclose(display.mean_line_.get_ydata(), history["mean"])
    assert display.ax_.get_yscale() == "log"
    assert display.line_.get_label() == "IRFILClassifier: std of FIL"
    # a second estimator on the same axes
    again = IRFILConvergenceDisplay.from_history(
        history, ax=display.ax_, name="other", show_mean=False
    )
    assert again.mean_line_ is None and len(display.ax_.get_lines()) == 3


def test_irfil_convergence_bad_input(plt, logistic):
    with pytest.raises(ValueError, match="has none"):
        IRFILConvergenceDisplay.from_estimator(logistic)
    with pytest.raises(NotFittedError):
        IRFILConvergenceDisplay.from_estimator(IRFILClassifier())
    with pytest.raises(ValueError, match=r"lacks the columns \['std', 'mean'\]"):
        IRFILConvergenceDisplay.from_history(pd.DataFrame({"iteration": [0]}))


# -- AttackSuccessDisplay --------------------------------------------------------


def test_attack_success_lines_and_error_bars_are_the_report(plt):
    rng = np.random.default_rng(0)
    fil = rng.exponential(size=200)
    success = rng.random(200) < fil / fil.max()
    groups = np.where(rng.random(200) < 0.5, "f", "m")
    report = attack_report(fil, success, groups=groups, n_bins=5)
    display = AttackSuccessDisplay.from_predictions(
        fil, success, groups=groups, n_bins=5
    )
    assert list(display.lines_) == ["all", "f", "m"]
    for group, line in display.lines_.items():
        block = report.loc[group]
        assert_array_equal(line.get_xdata(), np.arange(1, 6))
        assert_allclose(line.get_ydata(), block["success_mean"])
        # the vertical bars span mean -+ sem
        (bars,) = display.errorbars_[group].lines[2]
        spans = np.array([seg[:, 1] for seg in bars.get_segments()])
        expected = block["success_mean"].to_numpy()[:, None] + np.outer(
            block["success_sem"], [-1, 1]
        )
        assert_allclose(spans, expected)

    by_fil = AttackSuccessDisplay.from_report(
        report, show_groups=["f"], x="fil_mean", name="white box"
    )
    assert list(by_fil.lines_) == ["f"] and by_fil.ax_.get_xscale() == "log"
    assert_allclose(by_fil.lines_["f"].get_xdata(), report.loc["f", "fil_mean"])
    assert by_fil.errorbars_["f"].get_label() == "white box"


def test_attack_success_bad_input(plt):
    report = attack_report(np.arange(8.0), np.ones(8), n_bins=2)
    with pytest.raises(ValueError, match="not groups of the report"):
        AttackSuccessDisplay.from_report(report, show_groups=["x"])
    with pytest.raises(ValueError, match=r"indexed by \(group, fil_bin\)"):
        AttackSuccessDisplay.from_report(report.reset_index())
    with pytest.raises(ValueError, match="success_sem"):
        AttackSuccessDisplay.from_report(report.drop(columns="success_sem"))


# -- ReconstructionBoundDisplay --------------------------------------------------


def test_reconstruction_points_are_bound_and_mse(plt):
    table = pd.DataFrame(
        {
            "mse": [1.0, 2.0, 0.5, 3.0, np.nan],
            "mse_bound": [0.5, 1.0, 1.0, 4.0, 1.0],
        }
    )
    with pytest.warns(UserWarning, match="1 of 5 values"):
        display = ReconstructionBoundDisplay.from_report(Bunch(report=table))
    assert_allclose(_offsets(display.scatter_), [[0.5, 1.0], [1.0, 2.0]])
    assert_allclose(_offsets(display.scatter_below_), [[1.0, 0.5], [4.0, 3.0]])
    assert_allclose(display.line_.get_xdata(), [0.5, 4.0])
    assert_allclose(display.line_.get_ydata(), [0.5, 4.0])
    assert display.ax_.get_xscale() == display.ax_.get_yscale() == "log"


def test_reconstruction_from_attack_uses_check_bound(plt, data):
    X, y = data
    model = OutputPerturbedLinearRegression(sigma=1e-2, lam=1e-2, random_state=0)
    attack = GLMReconstructionAttack(model.fit(X, y)).fit(X, y)
    result = attack.check_bound(X).report
    display = ReconstructionBoundDisplay.from_estimator(
        attack, X, highlight_below=False
    )
    assert display.scatter_below_ is None
    assert_allclose(_offsets(display.scatter_), result[["mse_bound", "mse"]])

    with pytest.raises(NotFittedError):
        ReconstructionBoundDisplay.from_estimator(GLMReconstructionAttack(model), X)
    with pytest.raises(TypeError, match="check_bound"):
        ReconstructionBoundDisplay.from_estimator(model, X)
    with pytest.raises(ValueError, match="no column 'mse'"):
        ReconstructionBoundDisplay.from_report(result.drop(columns="mse"))


# -- MembershipROCDisplay --------------------------------------------------------


@pytest.fixture(scope="module")
def membership_attack():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = rng.integers(0, 2, size=300)
    member = np.arange(300) < 150
    model = DecisionTreeClassifier(max_depth=5, random_state=0)
    model.fit(X[member], y[member])
    attack = LossThresholdMembershipInference(model, random_state=0)
    return attack.fit(X, y, member), X, y, member


def test_membership_roc_is_the_attack_curve_with_the_diagonal(plt, membership_attack):
    attack = membership_attack[0]
    display = MembershipROCDisplay.from_estimator(attack, name="loss")
    assert_array_equal(display.line_.get_xdata(), attack.roc_["fpr"])
    assert_array_equal(display.line_.get_ydata(), attack.roc_["tpr"])
    assert display.line_.get_label() == f"loss (AUC = {attack.auc_:.2f})"
    assert display.ax_.get_xscale() == display.ax_.get_yscale() == "log"
    # the diagonal TPR = FPR from the smallest positive rate of the curve to 1
    roc = attack.roc_.to_numpy()[:, :2]
    low = roc[roc > 0].min()
    assert_allclose(display.chance_level_.get_xdata(), [low, 1.0])
    assert_allclose(display.chance_level_.get_ydata(), [low, 1.0])
    assert display.chance_level_.get_label() == "chance (AUC = 0.5)"
    assert display.figure_ is display.ax_.figure


def test_membership_roc_from_predictions_is_sklearns_curve(plt, membership_attack):
    attack, X, y, member = membership_attack
    scores = attack.decision_function(X, y)
    fpr, tpr, _ = roc_curve(member, scores, drop_intermediate=False)
    display = MembershipROCDisplay.from_predictions(
        member, scores, log_scale=False, plot_chance_level=False, color="C3"
    )
    assert_array_equal(display.line_.get_xdata(), fpr)
    assert_array_equal(display.line_.get_ydata(), tpr)
    assert display.line_.get_label() == f"AUC = {roc_auc_score(member, scores):.2f}"
    assert display.chance_level_ is None
    assert display.ax_.get_xscale() == "linear"
    assert display.line_.get_color() == "C3"
    # a second attack on the same axes, with a linear diagonal from 0 to 1
    other = MembershipROCDisplay.from_predictions(
        member, -scores, name="reversed", ax=display.ax_, log_scale=False
    )
    assert other.ax_ is display.ax_ and len(display.ax_.get_lines()) == 3
    assert_array_equal(other.chance_level_.get_xdata(), [0.0, 1.0])
    labels = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert labels[1].startswith("reversed (AUC = ")


def test_membership_roc_bad_input(plt, membership_attack, logistic):
    attack, _, _, member = membership_attack
    with pytest.raises(NotFittedError):
        MembershipROCDisplay.from_estimator(clone(attack))
    with pytest.raises(TypeError, match="roc_"):
        MembershipROCDisplay.from_estimator(logistic)
    with pytest.raises(ValueError, match="both members and non-members"):
        MembershipROCDisplay.from_predictions(np.ones(10), np.arange(10.0))
    with pytest.raises(ValueError, match="same length"):
        MembershipROCDisplay.from_predictions(member, np.arange(10.0))
    with pytest.raises(ValueError, match="0/1"):
        MembershipROCDisplay.from_predictions(member * 2, np.arange(300.0))
    with pytest.raises(ValueError, match="non-decreasing"):
        MembershipROCDisplay(fpr=[0.0, 0.5, 0.4], tpr=[0.0, 0.5, 1.0]).plot()
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        MembershipROCDisplay(fpr=[0.0, 2.0], tpr=[0.0, 1.0]).plot()


# -- MSEBoundDisplay -------------------------------------------------------------


def test_mse_bound_histogram_and_rdp_line(plt, logistic):
    bounds = logistic.privacy_report_["mse_bound"].to_numpy()
    rdp = logistic.mse_bound_rdp(2.0)
    display = MSEBoundDisplay.from_estimator(logistic, diameter=2.0, bins=10)
    assert display.rdp_line_.get_xdata()[0] == rdp
    assert display.ax_.get_xscale() == "log"
    assert_array_equal(
        _heights(display.bars_), np.histogram(bounds, bins=display.bin_edges_)[0]
    )
    assert _heights(display.bars_).sum() == bounds.size

    curve = MSEBoundDisplay.from_report(
        logistic.privacy_report_, rdp_bound=0.5, kind="sorted"
    )
    assert_allclose(curve.line_.get_ydata(), np.sort(bounds))
    assert_array_equal(curve.line_.get_xdata(), np.arange(1, bounds.size + 1))
    assert curve.rdp_line_.get_ydata()[0] == 0.5 and curve.bars_ is None


def test_mse_bound_bad_input(plt, logistic, data):
    X, y = data
    no_dp = OutputPerturbedLogisticRegression(lam=0.1, random_state=0).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="data_norm"):
        display = MSEBoundDisplay.from_estimator(no_dp, diameter=2.0)
    assert display.rdp_line_ is None
    with pytest.raises(ValueError, match="not both"):
        MSEBoundDisplay.from_estimator(logistic, diameter=2.0, rdp_bound=1.0)
    with pytest.raises(ValueError, match="rdp_bound must be finite and > 0"):
        MSEBoundDisplay.from_estimator(logistic, rdp_bound=-1.0)
    with pytest.raises(ValueError, match="kind"):
        MSEBoundDisplay.from_estimator(logistic, kind="violin")


# -- PerInstanceEpsilonDisplay ---------------------------------------------------


def test_per_instance_epsilon_by_class(plt, data):
    X, y = data
    clf = DPSGDClassifier(batch_size=10, max_iter=2, random_state=0).fit(X, y)
    eps = clf.privacy_report_["epsilon"].to_numpy()
    display = PerInstanceEpsilonDisplay.from_estimator(clf, groups=y, bins=5)
    assert display.global_line_.get_xdata()[0] == clf.epsilon_
    for label in (0, 1):
        expected, _ = np.histogram(
            eps[y == label], bins=display.bin_edges_, density=True
        )
        assert_allclose(_heights(display.bars_[label]), expected, rtol=1e-12)

    box = PerInstanceEpsilonDisplay.from_report(
        clf.privacy_report_, global_epsilon=clf.epsilon_, groups=y, kind="box"
    )
    assert box.groups_ == [0, 1]
    for k, label in enumerate(box.groups_):
        median = box.boxplot_["medians"][k].get_ydata()[0]
        assert_allclose(median, np.median(eps[y == label]))
    assert box.global_line_.get_ydata()[0] == clf.epsilon_


def test_per_instance_epsilon_bad_input(plt, data):
    irfil = IRFILClassifier(sigma=0.5, n_iter=1, tol=0, random_state=0).fit(*data)
    with pytest.raises(ValueError, match="no column 'epsilon'"):
        PerInstanceEpsilonDisplay.from_estimator(irfil)
    with pytest.raises(NotFittedError):
        PerInstanceEpsilonDisplay.from_estimator(DPSGDClassifier())
    with pytest.raises(ValueError, match="kind"):
        PerInstanceEpsilonDisplay(epsilon=[1.0]).plot(kind="violin")
