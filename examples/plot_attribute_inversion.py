"""
=====================================================================
Attribute inversion: attack success follows the per-attribute FIL
=====================================================================

A privacy number is worth what it predicts. Here a white-box adversary (Hannun
et al., 2021, eq. 30) knows the whole training set of a private ridge
regression except one patient's sex, plus the released weights, and guesses
the value whose re-fitted model lands closest to the release. A black-box
adversary (Fredrikson et al., 2014) only queries the model. The white-box
attack succeeds most often on the patients whose per-attribute Fisher
information loss ``eta_ij`` is largest, the pattern of the paper's Figure 7;
more output noise pulls every decile towards the black-box attack and the
prior.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data: scikit-learn's diabetes data (442 patients, 10 features); the
# attacked attribute is ``sex`` (two values), the other features standardised.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.preprocessing import StandardScaler

from sklearn_fil import OutputPerturbedLinearRegression
from sklearn_fil.attacks import (
    BlackBoxAttributeInversion,
    WhiteBoxAttributeInversion,
    attack_report,
)

data = load_diabetes(as_frame=True, scaled=False)
X, y = data.data.copy(), data.target
numeric = [c for c in X.columns if c != "sex"]
X[numeric] = StandardScaler().fit_transform(X[numeric])
X["sex"] = (X["sex"] == 2).astype(float)
y = (y - y.mean()) / y.std()
truth = X["sex"].to_numpy()
prior = max(truth.mean(), 1 - truth.mean())

# %%
# Attack every patient under many noise draws, for two noise levels. The
# per-attribute FIL ``fil[sex]`` does not depend on the draw (only on sigma).
n_trials = 40
results = {}
for sigma in (3e-3, 1e-2):
    white, black = [], []
    for seed in range(n_trials):
        model = OutputPerturbedLinearRegression(
            sigma=sigma, lam=1e-2, random_state=seed
        )
        model.fit(X, y)
        released = model.release()  # what the adversaries see
        wb = WhiteBoxAttributeInversion(released, attribute="sex").fit(X, y)
        bb = BlackBoxAttributeInversion(released, attribute="sex").fit(X, y)
        white.append(wb.transform(X)[:, 0] == truth)
        black.append(bb.transform(X)[:, 0] == truth)
    fil = model.privacy_report_["fil[sex]"].to_numpy()
    results[sigma] = (
        attack_report(fil, np.mean(white, axis=0)),
        attack_report(fil, np.mean(black, axis=0)),
    )
    print(
        f"sigma={sigma:g}: white-box accuracy {np.mean(white):.3f}, "
        f"black-box {np.mean(black):.3f}, prior {prior:.3f}"
    )

# %%
# Accuracy by decile of ``fil[sex]`` (1 = least exposed patients).
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, (sigma, (white, black)) in zip(axes, results.items(), strict=True):
    deciles = white.loc["all"].index
    ax.errorbar(
        deciles,
        white.loc["all", "success_mean"],
        yerr=white.loc["all", "success_sem"],
        marker="o",
        label="white box (eq. 30)",
    )
    ax.errorbar(
        deciles,
        black.loc["all", "success_mean"],
        yerr=black.loc["all", "success_sem"],
        marker="s",
        label="black box (eq. 31)",
    )
    ax.axhline(prior, color="grey", linestyle="--", label="majority guess")
    ax.set_title(f"sigma = {sigma:g}")
    ax.set_xlabel("decile of the per-attribute FIL of sex")
    ax.set_xticks(deciles)
axes[0].set_ylabel("attack accuracy")
axes[0].legend()
fig.tight_layout()
plt.show()
