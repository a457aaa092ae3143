# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
"""The displays on a fitted Pipeline draw what they draw for its final step,
with attributes named by the original columns; grouped histograms are
densities, so a small group shows beside a large one."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.datasets import load_breast_cancer
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import StandardScaler

from sklearn_fil import IRFILClassifier, OutputPerturbedLogisticRegression
from sklearn_fil.attacks import GLMReconstructionAttack
from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.plotting import (
    ExposedExamplesDisplay,
    FILHistogramDisplay,
    IRFILConvergenceDisplay,
    MSEBoundDisplay,
    PerInstanceEpsilonDisplay,
    ReconstructionBoundDisplay,
)
from tests._compas import compas, compas_columns


@pytest.fixture
def plt():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def _heights(bars):
    return np.array([patch.get_height() for patch in bars.patches])


def _glm(**params):
    defaults = dict(
        sigma=0.5, lam=0.05, data_norm=4.0, penalize_intercept=True, random_state=0
    )
    return OutputPerturbedLogisticRegression(**{**defaults, **params})


@pytest.fixture(scope="module")
def compas_pipeline():
    X, y = compas()
    pipe = Pipeline([("ct", compas_columns()), ("clf", _glm(onehot_groups="auto"))])
    return pipe.fit(X, y), X, y


@pytest.fixture(scope="module")
def cancer():
    """A sklearn dataset as a DataFrame: the scaler keeps its column names."""
    X, y = load_breast_cancer(return_X_y=True, as_frame=True)
    return X.iloc[::3], y.iloc[::3].to_numpy()


def _report_column_of(pipe, prefix):
    """The final step's report column of the transformed columns named
    ``prefix*`` by the Pipeline's prefix (one attribute: a one-hot group)."""
    names = pipe[:-1].get_feature_names_out()
    cols = sorted(np.flatnonzero([n.startswith(prefix) for n in names]).tolist())
    groups = pipe[-1].release().get_params()["onehot_groups"]
    (group,) = [g for g, c in groups.items() if sorted(c) == cols]
    return f"fil[{group}]"


def test_fil_histogram_of_an_original_categorical_column(plt, compas_pipeline):
    pipe, X, y = compas_pipeline
    by_hand_column = _report_column_of(pipe, "onehot__race_")
    display = FILHistogramDisplay.from_estimator(pipe, column="fil[race]", groups=y)
    by_hand = FILHistogramDisplay.from_estimator(
        pipe[-1], column=by_hand_column, groups=y
    )
    assert_array_equal(display.values, pipe[-1].privacy_report_[by_hand_column])
    assert_array_equal(display.bin_edges_, by_hand.bin_edges_)
    for label in (0, 1):
        assert_array_equal(
            _heights(display.bars_[label]), _heights(by_hand.bars_[label])
        )
    # labelled by the original column, whichever way the column was named
    assert display.ax_.get_xlabel() == "fil[race]"
    assert by_hand.ax_.get_xlabel() == by_hand_column
    again = FILHistogramDisplay.from_estimator(pipe, column=by_hand_column)
    assert again.ax_.get_xlabel() == "fil[race]"
    numeric = FILHistogramDisplay.from_estimator(pipe, column="fil[age]")
    assert_array_equal(numeric.values, pipe[-1].privacy_report_["fil[x8]"])
    # the whole-example columns are the final step's
    whole = FILHistogramDisplay.from_estimator(pipe, groups=X["sex"])
    assert_array_equal(whole.values, pipe[-1].privacy_report_["fil"])


def test_levels_measured_one_by_one_are_named_by_level(plt, compas_pipeline):
    pipe, X, y = compas_pipeline
    levels = Pipeline([("ct", pipe[0]), ("clf", _glm())]).fit(X, y)
    names = list(pipe[:-1].get_feature_names_out())
    j = names.index("onehot__race_Caucasian")
    display = FILHistogramDisplay.from_estimator(levels, column="fil[race=Caucasian]")
    assert_array_equal(display.values, levels[-1].privacy_report_[f"fil[x{j}]"])
    # without onehot_groups the column is no attribute of the model
    with pytest.raises(ValueError, match=r"no column 'fil\[race\]'"):
        FILHistogramDisplay.from_estimator(levels, column="fil[race]")


def test_mse_bound_of_a_pipeline_is_the_final_steps(plt, compas_pipeline):
    pipe, _, _ = compas_pipeline
    display = MSEBoundDisplay.from_estimator(pipe, diameter=8.0, kind="sorted")
    by_hand = MSEBoundDisplay.from_estimator(pipe[-1], diameter=8.0, kind="sorted")
    assert_array_equal(display.line_.get_ydata(), by_hand.line_.get_ydata())
    assert display.rdp_line_.get_ydata()[0] == pipe[-1].mse_bound_rdp(8.0)


def test_scaler_pipeline_names_and_images(plt, cancer):
    X, y = cancer
    pipe = make_pipeline(StandardScaler(), _glm(data_norm=10.0)).fit(X, y)
    display = FILHistogramDisplay.from_estimator(pipe, column="fil[mean radius]")
    assert_array_equal(display.values, pipe[-1].privacy_report_["fil[x0]"])
    assert display.ax_.get_xlabel() == "fil[mean radius]"
    # the raw rows are the images, ranked by the final step's report
    images = ExposedExamplesDisplay.from_estimator(pipe, X, n=2, image_shape=(5, 6))
    by_hand = ExposedExamplesDisplay.from_estimator(
        pipe[-1], X, n=2, image_shape=(5, 6)
    )
    most = np.argmax(pipe[-1].privacy_report_["fil"].to_numpy())
    assert_array_equal(
        images.images_[0, 0].get_array(), X.iloc[most].to_numpy().reshape(5, 6)
    )
    assert_array_equal(images.index, by_hand.index)


def test_dpsgd_and_irfil_pipelines(plt, cancer):
    X, y = cancer
    dpsgd = make_pipeline(
        StandardScaler(), DPSGDClassifier(batch_size=20, max_iter=2, random_state=0)
    ).fit(X, y)
    display = PerInstanceEpsilonDisplay.from_estimator(dpsgd, groups=y, bins=5)
    by_hand = PerInstanceEpsilonDisplay.from_estimator(dpsgd[-1], groups=y, bins=5)
    assert display.global_line_.get_xdata()[0] == dpsgd[-1].epsilon_
    for label in (0, 1):
        assert_array_equal(
            _heights(display.bars_[label]), _heights(by_hand.bars_[label])
        )
    irfil = make_pipeline(
        StandardScaler(), IRFILClassifier(sigma=0.5, n_iter=2, tol=0, random_state=0)
    ).fit(X, y)
    history = IRFILConvergenceDisplay.from_estimator(irfil)
    assert_allclose(history.line_.get_ydata(), irfil[-1].fil_history_["std"])
    assert history.line_.get_label() == "IRFILClassifier: std of FIL"


def test_reconstruction_display_of_an_attack_on_a_pipeline(plt, compas_pipeline):
    grouped, X, y = compas_pipeline
    # check_bound needs a FIL per transformed column: no one-hot groups
    pipe = Pipeline([("ct", grouped[0]), ("clf", _glm())]).fit(X, y)
    attack = GLMReconstructionAttack(pipe).fit(X, y)
    display = ReconstructionBoundDisplay.from_estimator(attack, X)
    Xt = pipe[:-1].transform(X)
    by_hand = ReconstructionBoundDisplay.from_estimator(
        GLMReconstructionAttack(pipe[-1]).fit(Xt, y), Xt
    )
    assert_array_equal(display.scatter_.get_offsets(), by_hand.scatter_.get_offsets())


def test_a_small_group_beside_a_large_one_is_visible(plt):
    rng = np.random.default_rng(0)
    values = np.r_[rng.uniform(0, 1, 500), rng.uniform(0, 1, 5)]
    groups = np.r_[np.zeros(500, dtype=int), np.ones(5, dtype=int)]
    report = pd.DataFrame({"fil": values})
    display = FILHistogramDisplay.from_report(report, groups=groups, bins=10)
    widths = np.diff(display.bin_edges_)
    tallest = {}
    for key, n in ((0, 500), (1, 5)):
        heights = _heights(display.bars_[key])
        # a density: integral 1 per group, the counts divided by n * width
        assert np.sum(heights * widths) == pytest.approx(1.0, rel=1e-12)
        counts = np.array(
            [
                np.sum(
                    np.digitize(values[groups == key], display.bin_edges_[1:-1]) == b
                )
                for b in range(10)
            ]
        )
        assert_allclose(heights, counts / (n * widths), rtol=1e-12)
        tallest[key] = heights.max()
    # bars of comparable height; counts would be 100 times apart on average
    assert 1 / 5 < tallest[1] / tallest[0] < 5
    labels = [t.get_text() for t in display.ax_.get_legend().get_texts()]
    assert labels == ["0 (n=500)", "1 (n=5)"]
    assert display.ax_.get_ylabel() == "density"
    # counts, on request (and the single histogram's default)
    counts = FILHistogramDisplay.from_report(
        report, groups=groups, bins=10, density=False
    )
    assert _heights(counts.bars_[0]).sum() == 500
    assert counts.ax_.get_ylabel() == "examples"
    assert _heights(FILHistogramDisplay.from_report(report).bars_["all"]).sum() == 505


def test_names_when_the_prefix_outputs_a_dataframe(plt, compas_pipeline):
    _, X, y = compas_pipeline
    ct = compas_columns().set_params(onehot__sparse_output=False)
    ct.set_output(transform="pandas")
    pipe = Pipeline([("ct", ct), ("clf", _glm(onehot_groups="auto"))]).fit(X, y)
    # the final step names its attributes after the prefix's output columns
    report = pipe[-1].privacy_report_
    assert "fil[onehot__race]" in report and "fil[scale__age]" in report
    display = FILHistogramDisplay.from_estimator(pipe, column="fil[race]")
    assert_array_equal(display.values, report["fil[onehot__race]"])
    again = FILHistogramDisplay.from_estimator(pipe, column="fil[scale__age]")
    assert_array_equal(again.values, report["fil[scale__age]"])
    assert again.ax_.get_xlabel() == "fil[age]"
