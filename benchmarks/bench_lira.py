# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
# The markdown output uses typographic signs (epsilon, multiplication) on purpose.
# ruff: noqa: RUF001
"""LiRA and RMIA against the loss-threshold attack on the Adult data set.

A pool of ``--n`` rows of the Adult training file; the target models are
trained on a random half of it (the members). Each shadow-model attack trains
its shadow models on random halves of the same pool, every row in half of
them (Carlini et al., 2022). Targets: a non-private ``MLPClassifier`` and
``OutputPerturbedLogisticRegression(data_norm=5, target_epsilon=1)``.

For each (target, attack) the table gives the AUC and the TPR at 0.1 % and
0.01 % FPR over every row of the pool (the scores read no membership; the
loss threshold's score is minus the loss), the largest ε that a point of the
ROC curve shows at 95 % confidence (Clopper-Pearson, pointwise, at the
model's δ or 1e-5), which must not exceed the ε = 1 model's claim, the fit
time of the attack and the time per shadow model.

Usage::

    python benchmarks/bench_lira.py [--n 4000] [--shadows 16] [--n-jobs 1]
        [--out benchmarks/results/lira.md]
"""

import argparse
import datetime
import math
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from _machine import cpu_name
from scipy.stats import beta
from sklearn.exceptions import ConvergenceWarning
from sklearn.metrics import roc_auc_score, roc_curve
from sklearn.neural_network import MLPClassifier

import sklearn_fil
from sklearn_fil import OutputPerturbedLogisticRegression
from sklearn_fil.attacks import (
    LiRAMembershipInference,
    LossThresholdMembershipInference,
    RMIAMembershipInference,
)
from sklearn_fil.datasets import load_adult
from sklearn_fil.exceptions import UtilityWarning

HERE = Path(__file__).resolve().parent
LEVELS = (0.001, 0.0001)


def rates(member, score):
    """AUC, TPR at each level (NaN below 1 / n_nonmembers) and the ROC."""
    fpr, tpr, _ = roc_curve(member, score, drop_intermediate=False)
    n_out = int((~member).sum())
    at = [tpr[fpr <= a].max() if a >= 1 / n_out else math.nan for a in LEVELS]
    return roc_auc_score(member, score), at, fpr, tpr


def epsilon_shown(member, fpr, tpr, delta):
    """Largest ε that a point of the ROC shows at 95 % (pointwise).

    At each point, ``log((TPR_low - δ) / FPR_high)`` with the one-sided
    97.5 % Clopper-Pearson bounds of its counts (both hold jointly with
    probability 95 %); 0 when nothing positive is shown. Pointwise: the
    largest over many points is not itself a 95 % bound.
    """
    m, n = int(member.sum()), int((~member).sum())
    tp = np.rint(tpr * m).astype(int)
    fp = np.rint(fpr * n).astype(int)
    low = np.where(tp > 0, beta.ppf(0.025, np.maximum(tp, 1), m - tp + 1), 0.0)
    high = np.where(fp < n, beta.ppf(0.975, fp + 1, np.maximum(n - fp, 1)), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        shown = np.log((low - delta) / high)
    return max(float(np.nanmax(shown)), 0.0)


def targets(args):
    """The unfitted target recipes, by name."""
    mlp = MLPClassifier(
        hidden_layer_sizes=(args.hidden,),
        alpha=1e-6,
        max_iter=args.max_iter,
        random_state=0,
    )
    private = OutputPerturbedLogisticRegression(
        data_norm=5.0, target_epsilon=1.0, random_state=0
    )
    return {"MLPClassifier (non-private)": mlp, "OutputPerturbedLogistic ε=1": private}


def attacks(model, args):
    """The attacks on one fitted target, by name."""
    common = {"fpr_levels": LEVELS, "random_state": args.seed}
    shadow = {**common, "n_jobs": args.n_jobs}
    return {
        "loss threshold": (LossThresholdMembershipInference(model, **common), 0),
        f"LiRA online ({args.shadows})": (
            LiRAMembershipInference(model, n_shadow_models=args.shadows, **shadow),
            args.shadows,
        ),
        f"LiRA offline ({args.shadows})": (
            LiRAMembershipInference(
                model, n_shadow_models=args.shadows, online=False, **shadow
            ),
            args.shadows,
        ),
        "RMIA offline (2)": (RMIAMembershipInference(model, **shadow), 2),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--shadows", type=int, default=16)
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--max-iter", type=int, default=150)
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(HERE / "results" / "lira.md"))
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    warnings.filterwarnings("ignore", category=UtilityWarning)

    X_all, y_all = load_adult(return_X_y=True)
    rng = np.random.default_rng(args.seed)
    rows = rng.choice(y_all.size, args.n, replace=False)
    X, y = X_all[rows], y_all[rows]
    member = rng.random(args.n) < 0.5
    header = (
        "| target | attack | fit s | s per shadow model | AUC | TPR@0.1% "
        "| TPR@0.01% | ε shown (95 %, pointwise) |"
    )
    lines = [header, "|" + " --- |" * 8]
    print(header, flush=True)
    for name, recipe in targets(args).items():
        start = time.perf_counter()
        model = recipe.fit(X[member], y[member])
        target_s = time.perf_counter() - start
        accuracy = (
            model.score(X[member], y[member]),
            model.score(X[~member], y[~member]),
        )
        delta = getattr(model, "delta_", None)
        line = (
            f"| {name} | (target fit; train / test accuracy "
            f"{accuracy[0]:.3f} / {accuracy[1]:.3f}) | {target_s:.1f} | | | | | |"
        )
        lines.append(line)
        print(line, flush=True)
        for attack_name, (attack, n_models) in attacks(model, args).items():
            start = time.perf_counter()
            attack.fit(X, y, membership=member)
            seconds = time.perf_counter() - start
            auc, at, fpr, tpr = rates(member, attack.decision_function(X, y))
            shown = epsilon_shown(member, fpr, tpr, 1e-5 if delta is None else delta)
            per_model = f"{seconds / n_models:.2f}" if n_models else "–"
            line = (
                f"| {name} | {attack_name} | {seconds:.1f} | {per_model} | {auc:.3f} "
                f"| {at[0]:.4f} | {at[1]:.4f} | {shown:.2f} |"
            )
            lines.append(line)
            print(line, flush=True)

    machine = (
        f"{cpu_name()}, {os.cpu_count()} logical CPUs (1-minute load average "
        f"{os.getloadavg()[0]:.1f} at the end: timings grow with it), Python "
        f"{platform.python_version()}, NumPy {np.__version__}, sklearn-fil "
        f"{sklearn_fil.__version__}"
    )
    n_out = int((~member).sum())
    text = "\n".join(
        [
            "<!--",
            "Authors: The sklearn-fil developers",
            "SPDX-License-Identifier: BSD-3-Clause",
            "-->",
            "",
            "# LiRA and RMIA against the loss threshold on Adult",
            "",
            f"Machine: {machine}. Date: {datetime.date.today().isoformat()}.",
            f"Command: `python {' '.join(sys.argv)}`.",
            "",
            f"Pool: {args.n} rows of the Adult training file, {int(member.sum())} "
            f"members (the targets' training set) and {n_out} non-members; every "
            "rate is over the whole pool (an FPR below "
            f"1/{n_out} = {1 / n_out:.5f} is not resolvable: NaN). Shadow "
            f"models: `clone` of the target on random halves of the pool, "
            f"`n_jobs={args.n_jobs}`. MLP: one hidden layer of {args.hidden}, "
            f"`alpha=1e-6`, `max_iter={args.max_iter}`.",
            "",
            *lines,
            "",
        ]
    )
    Path(args.out).write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
