"""
=====================================================================
Hannun et al. (2021): attribute inversion on IWPC and UCI Adult
=====================================================================

This example reproduces the attribute-inversion experiments of Hannun, Guo
and van der Maaten, "Measuring data leakage in machine-learning models with
Fisher information" (UAI 2021), on the real IWPC warfarin data and the UCI
Adult census data. Figure 6: on IWPC, how the L2 penalty ``lam`` and the
noise ``sigma`` of output-perturbed ridge regression move the per-attribute
Fisher information loss (FIL) of the VKORC1 genotype, the test error, and the
accuracy of a white-box (paper, eq. 30) and a black-box (eq. 31, Fredrikson
et al. 2014) adversary who tries to recover each patient's genotype.
Figure 7: iteratively reweighted FIL (IRFIL) aimed at the attacked attribute
(VKORC1 on IWPC, marital status on Adult) levels its FIL across the examples;
does it also level the white-box attack's success, which before IRFIL grows
with the FIL decile? The paper gives these figures as plots only, so the
printed comparisons are with the statements of its section 6.4.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

# %%
# Settings
# --------
# The documentation runs the experiment at the sizes below; the test suite
# sets ``SKLEARN_FIL_EXAMPLE_QUICK=1`` for a smaller grid, fewer noise draws
# and a subset of Adult, which changes the numbers. The paper uses 100 noise
# draws everywhere.
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.metrics import mean_squared_error
from sklearn.model_selection import train_test_split

from sklearn_fil import IRFILRegressor, OutputPerturbedLinearRegression
from sklearn_fil.attacks import (
    BlackBoxAttributeInversion,
    WhiteBoxAttributeInversion,
    attack_report,
)
from sklearn_fil.datasets import load_adult, load_iwpc
from sklearn_fil.plotting import (
    AttackSuccessDisplay,
    FILHistogramDisplay,
    IRFILConvergenceDisplay,
)

QUICK = os.environ.get("SKLEARN_FIL_EXAMPLE_QUICK") == "1"
LAMS = (1e-3, 1.0) if QUICK else (1e-5, 1e-3, 1e-1, 1.0)  # Figure 6
SIGMAS = np.logspace(-4, -2, 3) if QUICK else np.logspace(-5, 0, 11)  # Figure 6
N_TRIALS_6 = 2 if QUICK else 5  # noise draws per (lam, sigma)
N_TRIALS_7 = 2 if QUICK else 30  # noise draws per IRFIL iteration
ITERATIONS = (0, 2) if QUICK else (0, 2, 10)  # IRFIL iterations attacked
N_ADULT = 2000 if QUICK else None  # Adult training rows (None: all 30,162)

# %%
# Data
# ----
# *IWPC*: ``load_iwpc`` reads the PharmGKB sheet (4,709 patients kept) with
# Yeom et al.'s features (race, age decade, height, weight, amiodarone, enzyme
# inducer, CYP2C9 and VKORC1 genotypes) and the standardised weekly dose as
# target; as in the paper, 20% of the patients are held out at random. Two
# differences from the paper's copy of Yeom et al.'s file (4,819 patients, 14
# features): race has a fourth level, "Unknown", and the attacked VKORC1
# genotype keeps all three levels, a one-hot group whose FIL is measured on
# the sum-to-one constraint (``onehot_groups``), where the paper drops a level
# and measures the two remaining columns without constraint. The library's
# attacks take a categorical attribute as a full one-hot group (one 1 per
# row); with a level dropped, the dropped genotype is the all-zero row, which
# they cannot try.
#
# *Adult*: ``load_adult(keep_all_levels=())`` gives the paper's 86 features
# for the 30,162 complete training rows: marital status merged into married /
# unmarried, relationship removed, one-hot encodings with their last level
# dropped, numeric features standardised. The attacked attribute is the
# binary column ``marital-status=married``. The label is the income class as
# -1 / +1, fitted by ridge regression as in the paper.
#
# Both models have no intercept, like the paper's.
iwpc = load_iwpc(as_frame=True)
X_iwpc, X_iwpc_test, y_iwpc, y_iwpc_test = train_test_split(
    iwpc.data, iwpc.target, test_size=0.2, random_state=0
)
VKORC1 = {"vkorc1": [iwpc.feature_names[j] for j in iwpc.sensitive_columns]}
vkorc1_true = X_iwpc[VKORC1["vkorc1"]].to_numpy().argmax(axis=1)

adult = load_adult(keep_all_levels=(), as_frame=True)
X_adult, y_adult = adult.data, 2.0 * adult.target - 1.0
if N_ADULT is not None:
    rows = np.sort(np.random.default_rng(0).choice(len(y_adult), N_ADULT, False))
    X_adult, y_adult = X_adult.iloc[rows], y_adult.iloc[rows]
MARRIED = "marital-status=married"
married_true = X_adult[MARRIED].to_numpy().astype(int)

# The baseline adversary of the paper guesses the most frequent value.
prior = {
    "IWPC": np.bincount(vkorc1_true).max() / len(vkorc1_true),
    "Adult": np.bincount(married_true).max() / len(married_true),
}
print(f"IWPC: {len(y_iwpc)} training / {len(y_iwpc_test)} test patients")
print(f"Adult: {len(y_adult)} training rows, {X_adult.shape[1]} features")
print(
    f"majority guess: VKORC1 {prior['IWPC']:.3f}, marital status {prior['Adult']:.3f}"
)

# %%
# Figure 6: the penalty, the noise and the attacks on IWPC
# --------------------------------------------------------
# The penalties are those of the paper's code and the noise scales span the
# same range. For every ``lam`` and ``sigma`` we release ``N_TRIALS_6`` noisy
# models; the adversaries see only the release (``release()``). The
# white-box adversary also knows the rest of the training set and the
# training recipe; the black-box adversary knows the patient's other features
# and dose, the prior of the genotype and the training error, and queries the
# model. ``eta`` is the per-patient FIL of the VKORC1 group (column
# ``fil[vkorc1]``); Figure 6 plots its mean ``eta_bar``, which scales as
# ``1 / sigma``. The seeds are reused across ``sigma``, so every curve sees
# the same noise directions.
#
# A fixed ``random_state`` makes the noise reproducible, so these releases are
# not private: fine for a documentation figure, never for a real release. The
# privacy reports are sensitive too, and are printed here for illustration
# only.


def iwpc_model(sigma, lam, seed):
    return OutputPerturbedLinearRegression(
        sigma=sigma,
        lam=lam,
        fit_intercept=False,
        onehot_groups=VKORC1,
        random_state=seed,
    )


eta_unit = {}  # per-patient FIL at sigma = 1, for Figure 6a
trials = []
for lam in LAMS:
    model = iwpc_model(1.0, lam, 0).fit(X_iwpc, y_iwpc)
    eta_unit[lam] = model.privacy_report_["fil[vkorc1]"].to_numpy()
    for sigma in SIGMAS:
        for seed in range(N_TRIALS_6):
            model = iwpc_model(sigma, lam, seed).fit(X_iwpc, y_iwpc)
            released = model.release()
            white = WhiteBoxAttributeInversion(released, attribute="vkorc1")
            black = BlackBoxAttributeInversion(released, attribute="vkorc1")
            trials.append(
                {
                    "lam": lam,
                    "sigma": sigma,
                    "eta_bar": model.privacy_report_["fil[vkorc1]"].mean(),
                    "test_mse": mean_squared_error(
                        y_iwpc_test, released.predict(X_iwpc_test)
                    ),
                    "white_box": white.fit(X_iwpc, y_iwpc).score(X_iwpc),
                    "black_box": black.fit(X_iwpc, y_iwpc).score(X_iwpc),
                }
            )
fig6 = pd.DataFrame(trials).groupby(["lam", "sigma"]).agg(["mean", "std"])

print("\nFigure 6 (IWPC): mean (std) over", N_TRIALS_6, "noise draws")
print("   lam   sigma    eta_bar  test MSE        white box      black box")
for (lam, sigma), row in fig6.iterrows():
    print(
        f"{lam:6.0e} {sigma:7.1e} {row['eta_bar', 'mean']:10.3g} "
        f"{row['test_mse', 'mean']:8.3f} ({row['test_mse', 'std']:6.3f}) "
        f"{row['white_box', 'mean']:6.3f} ({row['white_box', 'std']:.3f}) "
        f"{row['black_box', 'mean']:6.3f} ({row['black_box', 'std']:.3f})"
    )

# %%
# The four panels of Figure 6.
fig, axes = plt.subplots(2, 2, figsize=(10, 8))
FILHistogramDisplay(
    values=np.concatenate([eta_unit[lam] for lam in LAMS]),
    groups=np.repeat(LAMS, [len(eta_unit[lam]) for lam in LAMS]),
    column="fil[vkorc1]",
).plot(ax=axes[0, 0], bins=50, log_scale=True, alpha=0.5)
axes[0, 0].legend(title="lam")
axes[0, 0].set_title("(a) FIL of VKORC1 at sigma = 1")
panels = [
    (axes[0, 1], "test_mse", "(b) test MSE"),
    (axes[1, 0], "white_box", "(c) white-box accuracy"),
    (axes[1, 1], "black_box", "(d) black-box accuracy"),
]
for ax, column, title in panels:
    for lam in LAMS:
        block = fig6.loc[lam]
        ax.errorbar(
            block["eta_bar", "mean"],
            block[column, "mean"],
            yerr=block[column, "std"],
            marker="o",
            capsize=3,
            label=f"lam = {lam:g}",
        )
    if column != "test_mse":
        ax.axhline(prior["IWPC"], color="grey", ls="--", label="majority guess")
    ax.set_xscale("log")
    ax.set_yscale("log" if column == "test_mse" else "linear")
    ax.set_xlabel("mean FIL of VKORC1, eta_bar")
    ax.set_title(title)
    ax.legend(fontsize="small")
fig.tight_layout()

# %%
# How our Figure 6 reads against the paper's statements (section 6.4).
small = fig6.xs(SIGMAS[0], level="sigma")
near = {  # for each lam, the noise whose eta_bar is closest to 1e-3
    lam: fig6.loc[lam].iloc[
        np.argmin(np.abs(np.log(fig6.loc[lam]["eta_bar", "mean"] / 1e-3)))
    ]
    for lam in LAMS
}
print("\nFigure 6: the paper's statements | ours")
print(
    "larger lam: the same eta_bar with less noise | eta_bar at sigma = "
    f"{SIGMAS[0]:g}: "
    + ", ".join(f"{small.loc[lam, ('eta_bar', 'mean')]:.3g}" for lam in LAMS)
)
print(
    "white-box accuracy falls with eta_bar | from "
    f"{fig6['white_box', 'mean'].max():.3f} to "
    f"{fig6['white_box', 'mean'].min():.3f} (majority guess "
    f"{prior['IWPC']:.3f})"
)
print(
    "black-box accuracy tracks the test MSE | at the smallest sigma: "
    + ", ".join(
        f"lam={lam:g}: {small.loc[lam, ('black_box', 'mean')]:.3f} "
        f"(MSE {small.loc[lam, ('test_mse', 'mean')]:.3f})"
        for lam in LAMS
    )
)
print("eta_bar ~ 1e-3 stops both attacks with little MSE loss |")
for lam, row in near.items():
    print(
        f"    lam={lam:g}: eta_bar {row['eta_bar', 'mean']:.2g}, white box "
        f"{row['white_box', 'mean']:.3f}, black box {row['black_box', 'mean']:.3f}"
        f", test MSE {row['test_mse', 'mean']:.3f} (vs "
        f"{small.loc[lam, ('test_mse', 'mean')]:.3f} without noise)"
    )

# %%
# With all the patients: the white-box attack recovers at least 97% of the
# genotypes while ``eta_bar`` is above 10 and comes within 0.04 of the
# majority guess (0.356) once ``eta_bar`` is below about 0.03, along one
# curve whatever ``lam`` (0.58 to 0.60 at ``eta_bar`` near 1 for the three
# smaller penalties): the white-box accuracy follows ``eta_bar``, as the
# paper finds. The black-box accuracy does not: it stays at the level the
# model's predictions allow (0.57 for small ``lam``, 0.50 for ``lam = 1``,
# whose model fits worse) until the noise ruins the test MSE, as the paper
# finds too. Larger ``lam`` gives the same ``eta_bar`` with less noise and
# raises the test MSE of the noiseless model.
#
# One statement does not carry over as we read it: at ``eta_bar`` near 1e-3
# both attacks are indeed near the majority guess, but for ``lam <= 0.1``
# that takes ``sigma`` near 1, where the test MSE of the standardised dose is
# about 8.6 (0.54 without noise); only ``lam = 1`` gets there at a moderate
# cost (MSE 0.88 against 0.72, and its black-box accuracy is still 0.465).
# The white-box attack is already near the majority guess at ``eta_bar``
# near 0.03 (``sigma = 0.1``, MSE 0.62 for ``lam = 1e-5``), and no ``sigma``
# stops the black-box attack without ruining the model: it infers the
# genotype from the dose the model predicts, which any useful model allows.
# The paper's curves are not in its text, so we cannot tell where they cross
# 1e-3. Our VKORC1 FIL is the constrained three-level one where the paper's
# is that of two dummy columns, but the two are of the same order here (the
# dummy columns alone have mean FIL 3.2e-3 and 1.9e-3 at ``sigma = 1``,
# ``lam = 1e-2``, against 2.2e-3 for the group). Five noise draws per point,
# against the paper's 100, make the curves noisier; the standard deviations
# are across draws, each of which moves every patient's guess together.

# %%
# Figure 7: IRFIL on the attacked attribute
# -----------------------------------------
# IRFIL (``IRFILRegressor(target=...)``) reweights the examples until the FIL
# of the attacked attribute is the same for all: ``target="vkorc1"`` (the
# one-hot group) on IWPC with ``lam = 1e-2`` and ``target=MARRIED`` on Adult
# with ``lam = 1e-3``, both at ``sigma = 1e-3``, as in the paper. We attack
# the model after ``ITERATIONS`` reweightings, and average each example's
# success over ``N_TRIALS_7`` noise draws; the examples are binned by the
# deciles of their FIL *before* IRFIL, as in the paper.
#
# The paper's white-box adversary knows the IRFIL weights (they are part of
# "the model training details").
# :class:`~sklearn_fil.attacks.WhiteBoxAttributeInversion` attacks an IRFIL
# model when it is given them (``fit(X, y, sample_weight=...)``), one release
# at a time. Figure 7 averages over ``N_TRIALS_7`` releases, so the example
# writes the weighted adversary of eq. 30 out once for all of them, for ridge
# regression without intercept: the minimiser with example ``i``'s attribute
# set to each candidate value is a rank-two update of the weighted problem
# (Woodbury identity), computed once and compared with every release. It is
# checked against the library's attack at the final IRFIL weights. The
# releases are drawn by :class:`~sklearn_fil.OutputPerturbedLinearRegression`
# fitted with ``sample_weight`` set to the IRFIL weights: the same weighted
# minimiser plus the same Gaussian noise as the IRFIL release.
SIGMA_7 = 1e-3


def candidate_minimisers(X, y, weights, lam, columns, candidates):
    """Minimisers of the weighted ridge objective, one per example and candidate.

    ``W[i, a]`` minimises ``sum_j weights_j (w^T x_j - y_j)^2 / 2 +
    (n lam / 2) ||w||^2`` with the columns ``columns`` of ``x_i`` set to
    ``candidates[a]``; shape ``(n, n_candidates, n_features)``.
    """
    n, p = X.shape
    k = len(candidates)
    H_inv = np.linalg.inv((X * weights[:, None]).T @ X + n * lam * np.eye(p))
    w_star = H_inv @ (X.T @ (weights * y))
    owner = np.repeat(np.arange(n), k)
    x = X[owner]
    z = x.copy()
    z[:, columns] = np.tile(candidates, (n, 1))
    c, Hx, Hz = weights[owner], (X @ H_inv)[owner], z @ H_inv
    # H^-1 b_z - w*: the right-hand side changes by c y (z - x)
    v = (c * y[owner])[:, None] * (Hz - Hx)
    xv, zv = (x * v).sum(1) + x @ w_star, (z * v).sum(1) + z @ w_star
    # H_z = H + U C U^T with U = [x, z], C = diag(-c, c): Woodbury
    S = np.empty((n * k, 2, 2))
    S[:, 0, 0] = 1.0 - c * (x * Hx).sum(1)
    S[:, 0, 1] = -c * (x * Hz).sum(1)
    S[:, 1, 0] = c * (z * Hx).sum(1)
    S[:, 1, 1] = 1.0 + c * (z * Hz).sum(1)
    coef = np.linalg.solve(S, np.stack([-c * xv, c * zv], axis=1)[:, :, None])
    W = w_star + v - Hx * coef[:, 0] - Hz * coef[:, 1]
    return W.reshape(n, k, p)


def nearest_candidate(W, releases):
    """Eq. 30: for each example and release, the candidate nearest the release."""
    centre = releases.mean(axis=0)  # distances from a nearby point: no cancellation
    W, releases = W - centre, releases - centre
    d2 = (W * W).sum(-1)[:, :, None] - 2 * W @ releases.T + (releases**2).sum(-1)
    return d2.argmin(axis=1)  # shape (n, n_releases)


cases = {
    "IWPC": dict(
        X=X_iwpc,
        y=y_iwpc,
        lam=1e-2,
        target="vkorc1",
        groups=VKORC1,
        columns=list(iwpc.sensitive_columns),
        candidates=np.eye(3),
        truth=vkorc1_true,
    ),
    "Adult": dict(
        X=X_adult,
        y=y_adult,
        lam=1e-3,
        target=MARRIED,
        groups=None,
        columns=[X_adult.columns.get_loc(MARRIED)],
        candidates=np.array([[0.0], [1.0]]),
        truth=married_true,
    ),
}
eta_before, histories, reports, shifts, agree = {}, {}, {}, {}, {}
for name, case in cases.items():
    X, y, truth = case["X"], case["y"], case["truth"]
    params = dict(
        sigma=SIGMA_7,
        lam=case["lam"],
        fit_intercept=False,
        onehot_groups=case["groups"],
    )
    plain = OutputPerturbedLinearRegression(**params, random_state=0).fit(X, y)
    eta_before[name] = plain.privacy_report_[f"fil[{case['target']}]"].to_numpy()
    irfil = dict(target=case["target"], tol=0.0, random_state=0)
    histories[name] = IRFILRegressor(**params, **irfil, n_iter=max(ITERATIONS)).fit(
        X, y
    )
    Xa, ya = X.to_numpy(), y.to_numpy()
    for it in ITERATIONS:
        if it == 0:
            weights = np.ones(len(ya))
        elif it == max(ITERATIONS):
            weights = histories[name].weights_
        else:
            weights = IRFILRegressor(**params, **irfil, n_iter=it).fit(X, y).weights_
        releases = np.array(
            [
                OutputPerturbedLinearRegression(**params, random_state=seed)
                .fit(X, y, sample_weight=weights)
                .coef_
                for seed in range(N_TRIALS_7)
            ]
        )
        W = candidate_minimisers(
            Xa, ya, weights, case["lam"], case["columns"], case["candidates"]
        )
        guesses = nearest_candidate(W, releases)
        if it == max(ITERATIONS):  # the library's attack on the first release
            first = OutputPerturbedLinearRegression(**params, random_state=0).fit(
                X, y, sample_weight=weights
            )
            library = WhiteBoxAttributeInversion(
                first.release(), attribute=case["target"]
            ).fit(X, y, sample_weight=weights)
            found = library.transform(X)
            index = (found[:, None, :] == case["candidates"][None]).all(-1).argmax(1)
            agree[name] = np.mean(index == guesses[:, 0])
            assert agree[name] > 0.999  # up to exact ties in floating point
        success = (guesses == truth[:, None]).mean(axis=1)
        reports[name, it] = attack_report(eta_before[name], success)
        # how far the minimiser moves when the attribute changes value
        moved = np.linalg.norm(W - W[np.arange(len(ya)), truth][:, None], axis=2)
        moved[np.arange(len(ya)), truth] = np.inf
        shifts[name, it] = moved.min(axis=1) / SIGMA_7
print(
    "\nguesses shared by the weighted adversary and WhiteBoxAttributeInversion "
    "at the final IRFIL weights: "
    + ", ".join(f"{name} {fraction:.2%}" for name, fraction in agree.items())
)

# %%
# Figure 7's numbers: the spread of the attribute's FIL over the IRFIL
# iterations, and the attack's accuracy by decile of the FIL before IRFIL.
# ``shift`` is the mean, over a decile, of the distance (in units of
# ``sigma``) between the minimiser at an example's true value and the nearest
# one at another value: the signal the white-box adversary must find under
# the noise. To first order it is at most ``eta`` for the binary column and
# ``sqrt(2) eta`` for the one-hot group, whose values are sqrt(2) apart.
for name in cases:
    history = histories[name].fil_history_
    print(f"\nFigure 7, {name}: FIL of the attribute by IRFIL iteration")
    print("  mean: " + np.array2string(history["mean"].to_numpy(), precision=3))
    print("  std:  " + np.array2string(history["std"].to_numpy(), precision=3))
    print(
        "  decile of the FIL before IRFIL: " + " ".join(f"{d:5d}" for d in range(1, 11))
    )
    for it in ITERATIONS:
        accuracy = reports[name, it].loc["all", "success_mean"]
        shift = attack_report(eta_before[name], shifts[name, it]).loc["all"]
        print(
            f"  iteration {it:2d}, white-box accuracy: "
            + " ".join(f"{a:5.3f}" for a in accuracy)
            + f"\n  iteration {it:2d}, shift / sigma:       "
            + " ".join(f"{a:5.2f}" for a in shift["success_mean"])
        )

print("\nFigure 7: the paper's statements | ours")
for name in cases:
    history = histories[name].fil_history_
    cv = (history["std"] / history["mean"]).to_numpy()
    print(
        f"{name}: the FIL converges to one value in a few iterations | std/mean "
        + ", ".join(f"{cv[it]:.2g} at iteration {it}" for it in ITERATIONS)
    )
    first = reports[name, ITERATIONS[0]].loc["all", "success_mean"].to_numpy()
    print(
        f"{name}: the top decile is initially much more exposed than the bottom "
        f"one | accuracy {first[-1]:.3f} against {first[0]:.3f}"
    )
    spread = [np.ptp(reports[name, it].loc["all", "success_mean"]) for it in ITERATIONS]
    print(
        f"{name}: the accuracy flattens across deciles after 2 iterations and is "
        "nearly constant after 10 | max - min over the deciles: "
        + ", ".join(
            f"{d:.3f} at iteration {it}"
            for it, d in zip(ITERATIONS, spread, strict=True)
        )
    )

# %%
# The plots of Figure 7: the mean and the standard deviation of the
# attribute's FIL over the IRFIL iterations (7a, 7c), and the white-box
# accuracy by decile of the FIL before IRFIL, after 0, 2 and 10 iterations
# (7b, 7d); the error bars are standard errors over the examples of a decile.
fig, axes = plt.subplots(2, 2, figsize=(10, 8))
for row, name in enumerate(cases):
    IRFILConvergenceDisplay.from_estimator(histories[name], ax=axes[row, 0], name=name)
    axes[row, 0].set_title(f"{name}: FIL of the attacked attribute")
    for it in ITERATIONS:
        AttackSuccessDisplay.from_report(
            reports[name, it],
            show_groups=["all"],
            name=f"IRFIL iteration {it}",
            ax=axes[row, 1],
        )
    axes[row, 1].axhline(prior[name], color="grey", ls="--", label="majority guess")
    axes[row, 1].legend(fontsize="small")
    axes[row, 1].set_title(f"{name}: white-box accuracy")
    axes[row, 1].set_xlabel("decile of the FIL before IRFIL (1: least exposed)")
fig.tight_layout()

# %%
# Adult behaves as in the paper. Before IRFIL the FIL of marital status
# spreads over two orders of magnitude and the attack's accuracy grows from
# 0.54 in the least exposed decile (the majority guess is 0.52) to 0.945 in
# the most exposed one; two reweightings cut the coefficient of variation of
# the FIL from 1.6 to 0.26 and the spread of the accuracy over the deciles
# from 0.40 to 0.11, ten cut them to 0.023 and 0.04. The mean FIL falls a
# little, from 0.99 to 0.74, and the mean accuracy stays at 0.65 to 0.66.
#
# IWPC does not. IRFIL levels the FIL of VKORC1 just as fast (its
# coefficient of variation falls from 0.81 to 5e-4 in ten iterations), but
# the attack's accuracy does not level: before IRFIL it is U-shaped (0.86 in
# the least exposed decile, 0.70 to 0.72 in the middle ones, 0.95 in the most
# exposed); after IRFIL the *least* exposed decile becomes the most
# vulnerable (0.99, against 0.71 for the top decile). The ``shift`` rows
# show why. The FIL is a derivative: it measures the leakage of an
# infinitesimal change of the genotype, and bounds the shift of the
# minimiser by ``sqrt(2) eta = 3.0`` sigma to first order. The attack tries
# the other genotypes, a jump of the one-hot row by ``u``, which changes the
# example's gradient by ``omega_i (r_i u + (w^T u) x_i + (w^T u) u)``: the
# last term is of second order and not in the FIL. VKORC1 has the largest
# effect in the model (a change of genotype moves the predicted dose by 0.46
# to 1.05 standard deviations), so for the patients the model fits best (a
# mean absolute residual ``r_i`` of 0.14 in the least exposed decile) that
# term dominates. IRFIL gives those patients about three times the average
# weight, which multiplies it: their mean shift grows to 6.3 sigma, twice the
# first-order bound, and the attack finds their genotype almost always. On
# Adult, where the coefficient of marital status (0.55) is of the order of
# the residuals of the -1 / +1 labels (median 0.48), the shift stays close to
# the FIL after IRFIL (0.71 to 0.95 sigma for an FIL of 0.74), and the
# accuracy levels.
#
# We do not know whether the paper's IWPC setting (its copy of the data, two
# dummy columns without constraint, 100 noise draws) avoids this: its Figure
# 7b is not in its text. The library's FIL is not at fault: checked
# separately, it matches a finite-difference derivative of the minimiser to
# seven digits on these patients. The gap is between a derivative and a
# jump. In quick mode Adult is cut to 2,000 rows, whose FIL is larger, and
# the attack then succeeds almost always; two noise draws make every
# accuracy noisy.
plt.show()
