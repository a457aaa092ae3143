"""
========================================================================
LiRA with shadow models: a non-private MLP and an ε = 1 model on Adult
========================================================================

The loss-threshold attack judges every row by one threshold on its loss. Some
rows are hard (their loss is high whether or not they were trained on), others
easy, so one threshold mixes them up, and at a low false-positive rate it finds
almost no member. The likelihood-ratio attack of Carlini et al. (2022), LiRA,
calibrates each row: it trains *shadow models* (clones of the target's recipe)
on random halves of the attacker's rows, fits one Gaussian to the row's
logit-scaled confidence in the shadow models trained with it and one to those
trained without it, and scores the target by the likelihood ratio.

We attack two models trained on the same half of a pool of Adult rows: a
non-private :class:`~sklearn.neural_network.MLPClassifier`, where LiRA finds
members the loss threshold misses at 0.1% FPR, and an
:class:`~sklearn_fil.OutputPerturbedLogisticRegression` calibrated to
(ε = 1, δ)-DP, where no attack can rise above the trade-off curve
:math:`\\mathrm{TPR} = e^\\varepsilon\\,\\mathrm{FPR} + \\delta` that ε permits.
Every rate is measured over the whole pool: the scores read no membership.

``SKLEARN_FIL_EXAMPLE_QUICK=1`` (set by the test suite) shrinks the pool, the
networks and the number of shadow models; the numbers below are from the full
run (see also ``benchmarks/results/lira.md``).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import os
import warnings

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import beta
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_curve
from sklearn.neural_network import MLPClassifier

from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.attacks import (
    LiRAMembershipInference,
    LossThresholdMembershipInference,
    attack_report,
)
from sklearn_fil.datasets import load_adult
from sklearn_fil.exceptions import UtilityWarning
from sklearn_fil.plotting import MembershipROCDisplay

QUICK = os.environ.get("SKLEARN_FIL_EXAMPLE_QUICK") == "1"
N_POOL = 1_000 if QUICK else 4_000  # rows of the pool; half are members
N_SHADOW = 4 if QUICK else 16  # shadow models of the MLP (paper: 64 to 256)
N_SHADOW_PRIVATE = 8 if QUICK else 64  # the logistic model's are cheap
HIDDEN, MAX_ITER = ((32,), 30) if QUICK else ((128,), 150)
LEVEL = 0.01 if QUICK else 0.001  # the FPR we read the TPR at (1 / non-members)

# the MLP does not converge in MAX_ITER epochs (by design: it overfits), and
# the small shadow models of the private model are of little use: say it once
warnings.filterwarnings("ignore", category=ConvergenceWarning)
warnings.filterwarnings("ignore", category=UtilityWarning)

# %%
# A pool of rows, half of them the training set
# ---------------------------------------------
# The attacker knows the pool (features and labels); the membership labels are
# used only to measure the attacks.

X_all, y_all = load_adult(return_X_y=True)
rng = np.random.default_rng(0)
rows = rng.choice(y_all.size, N_POOL, replace=False)
X, y = X_all[rows], y_all[rows]
member = rng.random(N_POOL) < 0.5
print(f"{member.sum()} members, {(~member).sum()} non-members")


def tpr_at(scores, level=LEVEL):
    """Largest TPR at FPR <= level over the pool (NaN when not resolvable)."""
    fpr, tpr, _ = roc_curve(member, scores, drop_intermediate=False)
    return tpr[fpr <= level].max() if level >= 1 / (~member).sum() else math.nan


# %%
# A non-private MLP
# -----------------
# Trained long enough to overfit. The loss threshold reads minus the loss;
# LiRA trains ``N_SHADOW`` clones of the same recipe (``n_jobs=-1`` would fit
# them on every core, ``joblib.parallel_config(backend="dask")`` on a cluster).

mlp = MLPClassifier(HIDDEN, alpha=1e-6, max_iter=MAX_ITER, random_state=0)
mlp.fit(X[member], y[member])
print(
    f"MLP accuracy: {mlp.score(X[member], y[member]):.3f} on its training rows, "
    f"{mlp.score(X[~member], y[~member]):.3f} on the others"
)
loss = LossThresholdMembershipInference(mlp, random_state=0)
loss.fit(X, y, membership=member)
lira = LiRAMembershipInference(
    mlp, n_shadow_models=N_SHADOW, fpr_levels=(LEVEL,), random_state=0
)
lira.fit(X, y, membership=member)
loss_scores = loss.decision_function(X, y)
print(
    f"TPR at {LEVEL:.1%} FPR: loss threshold {tpr_at(loss_scores):.4f}, "
    f"LiRA {lira.tpr_at_fpr_[LEVEL]:.4f} (a guess: {LEVEL})"
)

# %%
# A model with an ε = 1 guarantee
# -------------------------------
# Output perturbation of the logistic regression, rows clipped to norm 5,
# noise calibrated to ε = 1. Its shadow models cost little, so LiRA gets 64
# of them and per-example variances. Whatever the attack, its ROC curve must
# stay under the (ε, δ) trade-off curve (up to sampling error in the rates).

private = OutputPerturbedLogisticRegression(
    data_norm=5.0, target_epsilon=1.0, random_state=0
).fit(X[member], y[member])
eps, delta = private.epsilon_, private.delta_
lira_private = LiRAMembershipInference(
    private, n_shadow_models=N_SHADOW_PRIVATE, fpr_levels=(LEVEL,), random_state=0
).fit(X, y, membership=member)
allowed = math.exp(eps) * LEVEL + delta
print(
    f"ε = {eps:.2f}, δ = {delta:.0e}: LiRA TPR at {LEVEL:.1%} FPR "
    f"{lira_private.tpr_at_fpr_[LEVEL]:.4f} (at most {allowed:.4f} allowed)"
)

# %%
# A point of the curve at FPR 0 with a few true positives is not a violation:
# with ``n`` non-members, no false positive only says that the FPR is below
# about ``3 / n``. The rates of each point, bounded at 95% (Clopper-Pearson),
# show an ε of ``log((TPR_low - δ) / FPR_high)``; the largest over the curve
# (pointwise, so optimistic for the attacker) must stay below the claim.


def epsilon_shown(roc, delta):
    """Largest ε that a point of ``roc`` shows at 95% (pointwise)."""
    m, n = int(member.sum()), int((~member).sum())
    tp = np.rint(roc["tpr"].to_numpy() * m).astype(int)
    fp = np.rint(roc["fpr"].to_numpy() * n).astype(int)
    low = np.where(tp > 0, beta.ppf(0.025, np.maximum(tp, 1), m - tp + 1), 0.0)
    high = np.where(fp < n, beta.ppf(0.975, fp + 1, np.maximum(n - fp, 1)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return max(float(np.nanmax(np.log((low - delta) / high))), 0.0)


print(
    f"ε shown by LiRA: {epsilon_shown(lira.roc_, delta):.2f} on the MLP, "
    f"{epsilon_shown(lira_private.roc_, delta):.2f} on the ε = {eps:.0f} model"
)

# %%
# The ROC curves on log axes
# --------------------------
# At the left of the plot, where a few members are named with near certainty,
# LiRA is far above the loss threshold on the MLP; on the ε = 1 model it stays
# under the dotted trade-off curve.

fig, ax = plt.subplots(figsize=(6, 5.5))
MembershipROCDisplay.from_predictions(
    member, loss_scores, name="MLP, loss threshold", ax=ax, plot_chance_level=False
)
MembershipROCDisplay.from_estimator(
    lira, name="MLP, LiRA", ax=ax, plot_chance_level=False
)
MembershipROCDisplay.from_estimator(lira_private, name="ε = 1 model, LiRA", ax=ax)
grid = np.logspace(-4, 0, 200)
bound = np.minimum(
    math.exp(eps) * grid + delta, 1 - math.exp(-eps) * (1 - delta - grid)
)
ax.plot(
    grid, np.minimum(bound, 1.0), ":", color="C3", label=f"(ε = {eps:.0f}, δ) bound"
)
ax.set_xlim(1 / (~member).sum() / 2, 1)
ax.set_ylim(1e-4, 1.05)
ax.legend(loc="lower right")
plt.show()

# %%
# The attack beside the FIL and the per-example ε
# -----------------------------------------------
# The private model reports, for each training row, its Fisher information
# loss and its per-instance ε. Binned by FIL, LiRA's score on the members
# (``scores_``, the log-likelihood ratio) can be read beside them with
# :func:`~sklearn_fil.attacks.attack_report`.

report = private.privacy_report_
table = attack_report(report["fil"], lira_private.scores_[member], n_bins=4)
# the same bins, with the mean per-instance epsilon of their rows
table["epsilon_mean"] = attack_report(report["fil"], report["epsilon"], n_bins=4)[
    "success_mean"
]
print(table[["fil_min", "fil_max", "n", "epsilon_mean", "success_mean", "success_sem"]])
