"""
=================================================================
Private linear regression at a target ε: warfarin dose (IWPC)
=================================================================

Ridge regression released with Gaussian output noise is (ε, δ)-differentially
private once every row and every label is bounded by a public number:
``data_norm`` clips the rows, ``label_bound`` the labels, and the minimiser
then lies where the squared loss has a bounded gradient (see "Differential
privacy of ridge regression" in the user guide). This example fits
:class:`~sklearn_fil.OutputPerturbedLinearRegression` with only
``target_epsilon``, ``data_norm`` and ``label_bound`` set on the IWPC warfarin
data, compares its test R² with scikit-learn's non-private
:class:`~sklearn.linear_model.Ridge` and with predicting the mean, and then
reads each patient's own ε from the privacy report.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# The data and its public bounds
# ------------------------------
# :func:`~sklearn_fil.datasets.load_iwpc` standardises the three numeric
# columns and the dose; the genotype of VKORC1 is a one-hot group, which
# clipping never rescales. The bounds must be chosen without looking at the
# data: a row whose standardised coordinates are each one standard deviation
# away, plus its indicator columns, has norm about 3, and 3 standard
# deviations of the dose bound almost every label. (The loader's
# standardisation reads every row; in a real release its means and scales
# would be public constants.) ``SKLEARN_FIL_EXAMPLE_QUICK=1`` (set by the test
# suite) draws fewer noises.
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

from sklearn_fil import OutputPerturbedLinearRegression
from sklearn_fil.datasets import load_iwpc

QUICK = os.environ.get("SKLEARN_FIL_EXAMPLE_QUICK") == "1"
SEEDS = range(2 if QUICK else 10)
EPSILONS = [0.25, 0.5, 1.0, 2.0, 4.0, 8.0]
DATA_NORM, LABEL_BOUND = 3.0, 3.0

iwpc = load_iwpc(as_frame=True)
X_train, X_test, y_train, y_test = train_test_split(
    iwpc.data, iwpc.target, test_size=0.3, random_state=0
)
print(f"{len(X_train)} training patients, {X_train.shape[1]} columns")


def private_model(epsilon, seed):
    return OutputPerturbedLinearRegression(
        target_epsilon=epsilon,
        data_norm=DATA_NORM,
        label_bound=LABEL_BOUND,
        onehot_groups=iwpc.onehot_groups,
        random_state=seed,  # a reproducible page; leave it None in a release
    )


# %%
# Test R² against ε
# -----------------
# ``lam="auto"`` picks λ from public numbers only (n, the number of weights,
# ``data_norm``, ε and δ), so the choice costs no privacy. Each ε gets fresh
# noise for every seed; the baselines do not depend on ε.
ridge = Ridge().fit(X_train, y_train).score(X_test, y_test)
mean_only = 1.0 - np.mean((y_test - y_train.mean()) ** 2) / np.var(y_test)
scores, lams = [], []
for epsilon in EPSILONS:
    runs = []
    for seed in SEEDS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a few rows are clipped, on purpose
            model = private_model(epsilon, seed).fit(X_train, y_train)
        runs.append(model.score(X_test, y_test))
    scores.append(runs)
    lams.append(model.lam_)
    print(
        f"epsilon = {model.epsilon_:4.2f}: test R^2 {np.mean(runs):.3f} "
        f"+- {np.std(runs):.3f}, lam_ = {model.lam_:.3g}, sigma_ = {model.sigma_:.3g}"
    )
print(f"non-private Ridge: {ridge:.3f}; the mean: {mean_only:.3f}")
print(
    f"rows clipped: {model.n_clipped_} of {len(X_train)}, labels clipped: "
    f"{model.n_labels_clipped_}; the last fit's guarantee: {model.guarantee_}"
)

fig, ax = plt.subplots(figsize=(6, 4))
ax.errorbar(
    EPSILONS,
    np.mean(scores, axis=1),
    yerr=np.std(scores, axis=1),
    marker="o",
    capsize=3,
    label="OutputPerturbedLinearRegression",
)
ax.axhline(ridge, color="k", linestyle="--", label="Ridge (non-private)")
ax.axhline(mean_only, color="grey", linestyle=":", label="the mean")
ax.set(xscale="log", xlabel="target ε (δ = default)", ylabel="test R²")
ax.set_title("Warfarin dose: private ridge regression")
ax.legend(loc="lower right")
fig.tight_layout()

# %%
# Each patient's own ε
# --------------------
# The guarantee is a worst case over every data set and every patient. The
# privacy report says, for these data, how much the release at ε = 1 leaks
# about each patient: ``epsilon`` of telling the data from the data without
# the patient, and ``epsilon_replace_one`` of telling it from the data with
# the patient replaced by any row and label the bounds allow. Both are
# computed from every patient's record: the report is sensitive and stays
# with the data; only ``model.release()`` may be published.
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    model = private_model(1.0, 0).fit(X_train, y_train)
report = model.privacy_report_
print(report[["epsilon", "epsilon_replace_one"]].describe().round(3))

fig, ax = plt.subplots(figsize=(6, 4))
bins = np.linspace(0, model.epsilon_, 40)
ax.hist(report["epsilon"], bins=bins, alpha=0.7, label="leave one out")
ax.hist(report["epsilon_replace_one"], bins=bins, alpha=0.7, label="replace one")
ax.axvline(model.epsilon_, color="k", linestyle="--", label="guarantee")
ax.set(xlabel="per-patient ε at ε = 1", ylabel="patients")
ax.legend()
fig.tight_layout()
plt.show()
