# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
# The markdown output uses typographic signs (multiplication) on purpose.
# ruff: noqa: RUF001
"""Cost of the white-box attribute inversion against naive re-fitting.

The white-box adversary of Hannun et al. (2021, eq. 30) attacks every
training example: for each example and candidate value it needs the
minimiser of the training objective with that one value changed. This script
times :class:`sklearn_fil.attacks.WhiteBoxAttributeInversion` on all
examples against the naive attack, which re-fits the model from scratch for
every (example, candidate) pair with the library's own solver (the same
objective, tolerance and intercept handling). The naive attack is timed on
the first ``--naive-rows`` examples and scaled to all of them (every row
costs the same fit); its guesses on those rows are compared with the fast
attack's.

Usage::

    python benchmarks/bench_attacks.py [--n 4000] [--d 15] [--naive-rows 100]
        [--out benchmarks/results/attacks.md]
"""

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from _machine import cpu_name

import sklearn_fil
from sklearn_fil import (
    OutputPerturbedLinearRegression,
    OutputPerturbedLogisticRegression,
)
from sklearn_fil._glm import fit_glm
from sklearn_fil.attacks import WhiteBoxAttributeInversion

HERE = Path(__file__).resolve().parent
LAM = 1e-2
LEVELS = 3


def make_data(n, d, loss, seed=0):
    """``d - 1`` normal features and a three-level attribute in the last column."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.standard_normal((n, d - 1)), rng.integers(0, LEVELS, n)])
    margin = X @ rng.standard_normal(d) / np.sqrt(d)
    if loss == "squared":
        return X, margin + 0.5 * rng.standard_normal(n)
    return X, (rng.uniform(size=n) < 1 / (1 + np.exp(-margin))).astype(float)


def naive_guesses(model, X, y, rows, tol):
    """Re-fit from scratch for every (row, candidate); the guessed values."""
    loss = (
        "squared" if isinstance(model, OutputPerturbedLinearRegression) else "logistic"
    )
    released = np.append(model.coef_, model.intercept_)
    guesses = []
    for i in rows:
        dist = []
        for value in range(LEVELS):
            Xc = X.copy()
            Xc[i, -1] = value
            w, _ = fit_glm(Xc, y, np.ones(len(y)), loss, LAM, True, False, tol, 100)
            dist.append(np.linalg.norm(w - released))
        guesses.append(float(np.argmin(dist)))
    return np.array(guesses)


def run(n, d, naive_rows, sigma):
    rows = []
    for loss, cls in [
        ("squared", OutputPerturbedLinearRegression),
        ("logistic", OutputPerturbedLogisticRegression),
    ]:
        X, y = make_data(n, d, loss)
        model = cls(sigma=sigma, lam=LAM, random_state=0).fit(X, y)
        for method in ("newton", "one_step"):
            if loss == "squared" and method == "one_step":
                continue  # the same computation: one step is exact
            attack = WhiteBoxAttributeInversion(model, attribute=d - 1, method=method)
            attack.fit(X, y)
            t0 = time.perf_counter()
            guess = attack.transform(X)[:, 0]
            fast = time.perf_counter() - t0
            accuracy = float(np.mean(guess == X[:, -1]))
            t0 = time.perf_counter()
            naive = naive_guesses(model, X, y, range(naive_rows), attack.tol)
            naive_s = (time.perf_counter() - t0) * n / naive_rows
            agree = float(np.mean(naive == guess[:naive_rows]))
            row = {
                "loss": loss,
                "method": method,
                "n_iter": attack.n_iter_,
                "fast_s": fast,
                "naive_s": naive_s,
                "speedup": naive_s / fast,
                "accuracy": accuracy,
                "agree": agree,
            }
            print(
                f"{loss:>9} {method:>9}  attack {fast:7.2f} s ({attack.n_iter_} steps)"
                f"  naive {naive_s:8.1f} s (extrapolated)  x{naive_s / fast:7.0f}"
                f"  accuracy {accuracy:.3f}  agree {agree:.3f}",
                flush=True,
            )
            rows.append(row)
    return rows


def write_markdown(path, args, rows, elapsed):
    cpu = cpu_name()
    lines = [
        "# White-box attribute inversion: all examples vs naive re-fitting",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
        f"- Command: `python benchmarks/bench_attacks.py --n {args.n} --d {args.d} "
        f"--naive-rows {args.naive_rows} --sigma {args.sigma:g}`",
        f"- sklearn-fil {sklearn_fil.__version__}, Python {platform.python_version()},"
        f" NumPy {np.__version__}; CPU: {cpu}, {os.cpu_count()} logical",
        f"- Load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}",
        f"- Wall time of the run: {elapsed / 60:.1f} min",
        f"- Data: n = {args.n} rows, d = {args.d} features (the last one a "
        f"{LEVELS}-level attribute, the attacked one), seed 0; models with "
        f"sigma = {args.sigma:g}, lam = {LAM:g}, an unpenalised intercept.",
        f"- *naive*: re-fit from scratch (`fit_glm`, the estimators' solver) for "
        f"each of the first {args.naive_rows} examples and {LEVELS} candidates, "
        f"scaled by n / {args.naive_rows}; *agree*: fraction of those examples "
        "where the naive and the fast attack guess the same value.",
        "",
        "| loss | method | Newton steps | attack, all examples, s | naive, s "
        "| speed-up | accuracy | agree |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['loss']} | {r['method']} | {r['n_iter']} | {r['fast_s']:.2f} | "
            f"{r['naive_s']:.1f} | {r['speedup']:.0f} × | {r['accuracy']:.3f} | "
            f"{r['agree']:.3f} |"
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=4000)
    parser.add_argument("--d", type=int, default=15)
    parser.add_argument("--naive-rows", type=int, default=100)
    parser.add_argument("--sigma", type=float, default=1e-3)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "attacks.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rows = run(args.n, args.d, args.naive_rows, args.sigma)
    write_markdown(args.out, args, rows, time.perf_counter() - started)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
