"""
=====================================================================
Reconstruction attack against the FIL bound (Guo et al., Figure 3)
=====================================================================

An informed adversary who knows every training example but one, plus that
example's label, can solve the stationarity condition of a released logistic
regression for the missing example's features (Balle et al., 2022; Guo et al.,
2022). Guo et al.'s Theorem 2 bounds the mean squared error of any *unbiased*
reconstruction by ``d / Tr(I_x)``, from the per-feature Fisher information loss
in the privacy report. Averaged over many releases, the attack's realised
error sits above the bound and follows it: examples the report calls exposed
are the ones the attack rebuilds best. Under heavy noise the attack turns
biased (the bound concerns unbiased attacks), and some examples fall below.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Data
# ----
# Digits 0 and 1, rows normalised, PCA to 10 dimensions, scaled to the unit
# ball.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA
from sklearn.preprocessing import normalize

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.attacks import GLMReconstructionAttack
from sklearn_fil.plotting import ReconstructionBoundDisplay

X, y = load_digits(return_X_y=True)
X, y = normalize(X[y <= 1]), y[y <= 1]
X = PCA(n_components=10, random_state=0).fit_transform(X)
X /= np.linalg.norm(X, axis=1).max()

# %%
# Attack against bound
# --------------------
# For two noise levels, attack every example of 30 independent releases and
# average the realised per-coordinate MSE. ``check_bound`` needs the fitted
# model (its privacy report is sensitive), the attack itself only the weights.
# Points above the diagonal respect the bound; points below it are
# highlighted.
n_releases = 30
fig, axes = plt.subplots(1, 2, figsize=(10, 4.5))
for ax, sigma in zip(axes, (1e-4, 1e-2), strict=True):
    mse = []
    for seed in range(n_releases):
        model = OutputPerturbedLogisticRegression(
            sigma=sigma, lam=1e-2, random_state=seed
        )
        model.fit(X, y)
        result = GLMReconstructionAttack(model).fit(X, y).check_bound(X)
        mse.append(result.report["mse"].to_numpy())
    mse = np.mean(mse, axis=0)
    bound = result.report["mse_bound"].to_numpy()
    held = mse >= bound
    print(
        f"sigma={sigma:g}: the mean realised MSE respects the bound for "
        f"{held.mean():.1%} of {len(X)} examples; median MSE / bound "
        f"{np.median(mse / bound):.1f}"
    )
    ReconstructionBoundDisplay(mse=mse, mse_bound=bound).plot(ax=ax)
    ax.set_title(f"sigma = {sigma:g}")
axes[0].set_ylabel(f"realised MSE (mean of {n_releases} releases)")
axes[0].legend()
fig.tight_layout()

# %%
# Interpretation
# --------------
# Under little noise the realised error sits a few times above the bound and
# follows it closely: the examples the report calls exposed are the ones the
# attack rebuilds best. Under a hundred times more noise the error scatters
# over orders of magnitude, and for a few of the least exposed examples (a
# bound above one, in the unit ball) the attack's error stays near one and
# falls below the bound: the attack is biased there, and the bound only limits
# unbiased attacks.
plt.show()
