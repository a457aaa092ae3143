# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
# The markdown output uses typographic signs (multiplication) on purpose.
# ruff: noqa: RUF001
"""Speed of DPSGDClassifier on CPU, and the cost of its per-example accounting.

On synthetic data shaped like MNIST (60,000 x 784, two classes), for logistic
regression and a 1 x 256 tanh MLP, this script times DP-SGD (batch size 256,
Poisson sampling, GELU clipping) in these configurations:

* *plain*: no per-example accounting (``per_instance_accounting=False``,
  ``fil_accounting=False``), the work every DP-SGD library does;
* *per-instance*: plain plus the per-instance epsilon of Yu et al.;
* *FIL, all coordinates* (logistic only): plain plus the exact Fisher
  information loss of Guo et al. with one column per feature;
* *FIL, k coordinates*: plain plus the FIL estimated from ``k`` sampled input
  coordinates per step;
* *both*: per-instance and sampled-coordinate FIL together;
* *Opacus*: the same model, data, sampling, clipping bound and noise with
  Opacus' ``PrivacyEngine`` (hard clipping; Opacus has no GELU clipping) when
  Opacus is installed, for one epoch.

It prints epochs per second and writes ``benchmarks/results/dpsgd.md``. The
estimator's numba kernels are compiled on a small fit before timing.

Usage::

    python benchmarks/bench_dpsgd.py [--epochs 10] [--mlp-epochs 1]
        [--fil-coordinates 16] [--out benchmarks/results/dpsgd.md]
"""

import argparse
import datetime
import logging
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from _machine import cpu_name

import sklearn_fil
from sklearn_fil.neural import DPSGDClassifier

HERE = Path(__file__).resolve().parent
N, D, BATCH = 60_000, 784, 256
MODELS = {"logistic": (), "mlp 1x256": (256,)}


def make_data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, D)) / np.sqrt(D)
    y = (X @ rng.standard_normal(D) > 0).astype(np.int64)
    return X, y


def time_ours(X, y, hidden, epochs, per_instance, fil, fil_coordinates):
    clf = DPSGDClassifier(
        hidden_layer_sizes=hidden,
        batch_size=BATCH,
        learning_rate=0.5,
        max_iter=epochs,
        per_instance_accounting=per_instance,
        fil_accounting=fil,
        fil_coordinates=fil_coordinates,
        random_state=0,
    )
    t0 = time.perf_counter()
    clf.fit(X, y)
    return time.perf_counter() - t0, clf


def time_opacus(X, y, hidden, epochs):
    """Opacus on the same model and data; None when Opacus is not installed."""
    try:
        import torch
        from opacus import PrivacyEngine
    except ImportError:
        return None
    torch.manual_seed(0)
    torch.set_num_threads(os.cpu_count() or 1)
    layers, width = [], D
    for h in hidden:
        layers += [torch.nn.Linear(width, h), torch.nn.Tanh()]
        width = h
    layers.append(torch.nn.Linear(width, 1))
    model = torch.nn.Sequential(*layers).double()
    data = torch.utils.data.TensorDataset(
        torch.from_numpy(X), torch.from_numpy(y.astype(np.float64))[:, None]
    )
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        poisson_sampling=True,
    )
    loss_fn = torch.nn.BCEWithLogitsLoss()
    t0 = time.perf_counter()
    for _ in range(epochs):
        for xb, yb in loader:
            if len(xb) == 0:
                continue
            optimizer.zero_grad()
            loss_fn(model(xb), yb).backward()
            optimizer.step()
    return time.perf_counter() - t0


def configurations(hidden, k):
    """(label, per-instance, FIL, sampled coordinates) of each timed run."""
    runs = [("plain", False, False, None), ("per-instance", True, False, None)]
    if not hidden:
        runs.append(("FIL, all coordinates", False, True, None))
    runs += [(f"FIL, {k} coordinates", False, True, k), ("both", True, True, k)]
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--mlp-epochs", type=int, default=1)
    parser.add_argument("--fil-coordinates", type=int, default=16)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "dpsgd.md")
    args = parser.parse_args(argv)
    logging.getLogger("absl").setLevel(logging.ERROR)  # dp-accounting's notes
    started = time.perf_counter()
    X, y = make_data()
    for hidden in MODELS.values():  # compile the numba kernels, fill the caches
        DPSGDClassifier(hidden_layer_sizes=hidden, batch_size=BATCH, max_iter=1).fit(
            X[:2000], y[:2000]
        )
    rows = []
    for name, hidden in MODELS.items():
        epochs = args.mlp_epochs if hidden else args.epochs
        plain = None
        for label, per_instance, fil, k in configurations(hidden, args.fil_coordinates):
            seconds, clf = time_ours(X, y, hidden, epochs, per_instance, fil, k)
            plain = seconds if plain is None else plain
            rows.append((name, label, epochs, seconds, seconds / plain, clf.epsilon_))
            print(
                f"{name:>10} {label:>22}: {epochs / seconds:6.2f} epochs/s, "
                f"{seconds / plain:5.2f} x plain",
                flush=True,
            )
        opacus = time_opacus(X, y, hidden, 1)
        if opacus is not None:
            rows.append(
                (
                    name,
                    "Opacus (hard clipping)",
                    1,
                    opacus,
                    opacus / plain * epochs,
                    None,
                )
            )
            print(f"{name:>10} {'Opacus':>22}: {1 / opacus:6.2f} epochs/s", flush=True)
    write_markdown(args, rows, time.perf_counter() - started)
    print(f"wrote {args.out}")
    return 0


def write_markdown(args, rows, elapsed):
    cpu = cpu_name()
    try:
        import opacus

        opacus_version = f"Opacus {opacus.__version__}"
    except ImportError:
        opacus_version = "Opacus not installed (no comparison)"
    lines = [
        "# DP-SGD on CPU: speed and the cost of per-example accounting",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
        f"- Command: `python benchmarks/bench_dpsgd.py --epochs {args.epochs} "
        f"--mlp-epochs {args.mlp_epochs} --fil-coordinates {args.fil_coordinates}`",
        f"- sklearn-fil {sklearn_fil.__version__}, Python {platform.python_version()},"
        f" NumPy {np.__version__}; {opacus_version}; CPU: {cpu}, "
        f"{os.cpu_count()} logical",
        f"- Load average at the end: {', '.join(f'{v:.1f}' for v in os.getloadavg())}",
        f"- Wall time of the run: {elapsed / 60:.1f} min",
        f"- Data: {N} x {D} standard normal / sqrt({D}), labels from a random "
        f"hyperplane; batch size {BATCH} (Poisson sampling), noise multiplier 1, "
        "clipping bound 1 (GELU for ours, hard for Opacus), learning rate 0.5, "
        "float64; Opacus runs one epoch. *FIL, all coordinates* is exact and adds a "
        "per-feature column (an n x 784 accumulator); *FIL, k coordinates* samples k "
        "input coordinates per step for an unbiased trace; *both* is the default "
        "with sampled coordinates.",
        "",
        "| model | configuration | epochs | epochs/s | time per epoch / plain "
        "| epsilon |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for name, label, epochs, seconds, ratio, eps in rows:
        lines.append(
            f"| {name} | {label} | {epochs} | {epochs / seconds:.2f} | {ratio:.2f} | "
            + ("" if eps is None else f"{eps:.2f}")
            + " |"
        )
    lines += [
        "",
        "Targets: plain DP-SGD at least as fast as Opacus; FIL accounting ≤ 1.5 × "
        "plain for the logistic model; per-instance accounting ≤ 1.1 × plain.",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
