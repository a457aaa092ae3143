"""
=====================================================================
DP-SGD: per-instance epsilon and FIL reconstruction bounds by class
=====================================================================

Every DP-SGD library reports one epsilon, the worst case over all training
examples. Most examples are far better protected: their gradients are small
once the model fits them, so each step costs them less privacy. This example
trains multinomial logistic regression with DP-SGD on scikit-learn's digits
and shows, class by class, two per-example measures from the privacy report:
the per-instance epsilon of Yu et al. (2022, their Figure 1) and the lower
bound on the error of any unbiased reconstruction of the example's pixels
from its Fisher information loss (Guo et al., 2022, their Figure 5). Last,
the digits the release exposes most and least.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data
# ----
# 8 x 8 digits, pixels scaled to [0, 1].
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits

from sklearn_fil.neural import DPSGDClassifier
from sklearn_fil.plotting import ExposedExamplesDisplay, PerInstanceEpsilonDisplay

X, y = load_digits(return_X_y=True)
X = X / 16.0

# %%
# Training
# --------
# DP-SGD with noise multiplier 1, GELU-smoothed clipping at 1,
# Poisson-sampled batches of 64 on average, 20 epochs. The privacy report
# holds both per-example measures; it is sensitive and never published.
clf = DPSGDClassifier(
    noise_multiplier=1.0,
    max_grad_norm=1.0,
    batch_size=64,
    learning_rate=1.0,
    max_iter=20,
    random_state=0,
).fit(X, y)
report = clf.privacy_report_
print(f"training accuracy {clf.score(X, y):.3f}")
print(f"worst-case epsilon {clf.epsilon_:.2f} at delta {clf.delta_:.1e}")
print("per-instance epsilon quantiles (5%, 50%, 95%):")
print(np.round(report["epsilon"].quantile([0.05, 0.5, 0.95]).to_numpy(), 2))

# %%
# Per class
# ---------
# The per-instance epsilon (left, with the worst case as a line) and the FIL
# bound on the per-pixel MSE of an unbiased reconstruction (right; larger is
# safer).
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
PerInstanceEpsilonDisplay.from_estimator(
    clf, groups=y, kind="box", ax=axes[0], showfliers=False
)
bounds = report["mse_bound"].replace(np.inf, np.nan)  # never sampled: infinite
classes = clf.classes_
axes[1].boxplot([bounds[y == c].dropna() for c in classes], showfliers=False)
axes[1].set_yscale("log")
axes[1].set_xticks(range(1, len(classes) + 1), classes)
axes[1].set_xlabel("class")
axes[1].set_ylabel("FIL bound on the per-pixel MSE (larger is safer)")
fig.tight_layout()

# %%
# The most and least exposed digits
# ---------------------------------
# The top row shows the eight digits with the largest diagonal FIL, the bottom
# row the eight with the smallest (Guo et al., 2022, Figure 6, for CIFAR-10).
ExposedExamplesDisplay.from_estimator(clf, X, column="dfil", n=8)

# %%
# Interpretation
# --------------
# Most digits are far better protected than the worst-case epsilon says. The
# classes the model fits worst (the largest training loss: 8, 1 and 9) pay the
# most privacy by both measures, the correlation between loss and privacy loss
# that Yu et al. report. Both per-example numbers are estimates computed from
# each example's data: they describe this training run, and they are as
# sensitive as the data.
plt.show()
