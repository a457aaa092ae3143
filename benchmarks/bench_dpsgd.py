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
  Opacus is installed, for one epoch, in its two CPU modes: ``hooks``
  (per-example gradients) and ``ghost`` (ghost clipping, its fastest), in
  float64 as ours; for the MLP also ghost clipping in float32 (PyTorch's
  default dtype, what its users meet).

It then measures the memory of per-instance accounting: in a fresh process
per run, a small logistic model (``MEMORY_D`` features, two epochs, no FIL
accounting) is fitted with and without ``per_instance_accounting`` at each
``--memory-sizes`` n, and the peak traced allocations (tracemalloc) and the
growth of the peak resident set over the fit are divided by n. With
``--old-accountant`` each size is also run with the accountant as it was
before its storage became sparse (``tests/accounting/_per_instance_reference.py``),
up to n = 10^6.

It prints epochs per second and writes ``benchmarks/results/dpsgd.md``. The
estimator's numba kernels are compiled on a small fit before timing, and an
untimed fit of each model fills the cache of ``epsilon_`` (the PLD accountant
takes seconds per setting).

``--only mlp`` (or ``logistic``) times one model alone and skips the memory
runs: the MLP against ghost clipping reruns in a few minutes. It prints the
rows and writes a file only when ``--out`` is given; an existing file keeps
everything but that model's rows (and its line of alternate runs), with a
line in its header saying when they were rerun.

Usage::

    python benchmarks/bench_dpsgd.py [--epochs 10] [--mlp-epochs 1]
        [--fil-coordinates 16] [--repeats 3] [--memory-sizes 100000 1000000]
        [--old-accountant] [--only {logistic,mlp}]
        [--skip-speed] [--out benchmarks/results/dpsgd.md]
"""

import argparse
import datetime
import importlib.util
import json
import logging
import os
import platform
import subprocess
import sys
import time
import tracemalloc
import warnings
from pathlib import Path

import numpy as np
from _machine import cpu_name

import sklearn_fil
from sklearn_fil.neural import DPSGDClassifier

HERE = Path(__file__).resolve().parent
N, D, BATCH = 60_000, 784, 256
MODELS = {"logistic": (), "mlp 1x256": (256,)}
ONLY = {"logistic": "logistic", "mlp": "mlp 1x256"}
OPACUS_MODES = {
    "hooks": "Opacus hooks",
    "ghost": "Opacus ghost clipping",
    "ghost32": "Opacus ghost clipping, float32",
}
MEMORY_D, MEMORY_EPOCHS = 10, 2


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


def time_opacus(X, y, hidden, epochs, mode="hooks"):
    """Opacus on the same model and data; None when Opacus is not installed.

    ``mode`` is Opacus' ``grad_sample_mode``: ``"hooks"`` (per-example
    gradients materialised by module hooks) or ``"ghost"`` (ghost clipping:
    per-example norms from the activations and backpropagated gradients
    without the per-example gradients, then a second backward pass of the
    loss reweighted by the clip factors), which needs the criterion; in
    float64 as ours, or ``"ghost32"``: ghost clipping in float32, PyTorch's
    default dtype (what a PyTorch user runs unless told otherwise).
    """
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
    dtype = np.float32 if mode == "ghost32" else np.float64
    model = torch.nn.Sequential(*layers)
    model = model.float() if mode == "ghost32" else model.double()
    data = torch.utils.data.TensorDataset(
        torch.from_numpy(X.astype(dtype, copy=False)),
        torch.from_numpy(y.astype(dtype))[:, None],
    )
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    engine = PrivacyEngine(accountant="rdp")
    loss_fn = torch.nn.BCEWithLogitsLoss()
    private = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        criterion=loss_fn,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        poisson_sampling=True,
        grad_sample_mode=mode.removesuffix("32"),
    )
    if mode.startswith("ghost"):
        model, optimizer, loss_fn, loader = private
    else:
        model, optimizer, loader = private
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


def speed_rows(args):
    """Time every configuration of both models, and Opacus' two modes.

    *plain* and Opacus' ghost clipping (the comparison the targets name) are
    timed ``args.repeats`` times, alternately, and the fastest of each kept:
    on a shared machine one slow run would decide the ratio otherwise; so is
    Opacus' hooks mode for the logistic model (its fastest there; one epoch of
    the MLP takes it about a minute, timed once). Returns the rows and, per
    model, every alternate time of each (``{"plain": [...], ...}``).
    """
    X, y = make_data()
    models = {k: v for k, v in MODELS.items() if args.only in (None, k)}
    for hidden in models.values():  # compile the numba kernels, fill the caches
        for fil in (True, False):
            DPSGDClassifier(
                hidden_layer_sizes=hidden,
                batch_size=BATCH,
                max_iter=1,
                fil_accounting=fil,
            ).fit(X[:2000], y[:2000])
    rows, alternate = [], {}
    for name, hidden in models.items():
        epochs = args.mlp_epochs if hidden else args.epochs
        # an untimed fit computes epsilon_ (dp-accounting's PLD, seconds; then
        # cached per settings), so that no timed fit pays for it
        time_ours(X, y, hidden, epochs, False, False, None)
        modes = ["ghost", "ghost32"] if hidden else ["ghost", "hooks"]
        runs = alternate[name] = {"plain": [], **{mode: [] for mode in modes}}
        for _ in range(args.repeats):
            seconds, clf = time_ours(X, y, hidden, epochs, False, False, None)
            if seconds <= min(runs["plain"], default=np.inf):
                best = clf
            runs["plain"].append(seconds)
            for mode in modes:
                opacus = time_opacus(X, y, hidden, 1, mode)
                if opacus is not None:
                    runs[mode].append(opacus)
            print(
                f"{name:>10} alternate: "
                + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items() if v)
                + f", load {os.getloadavg()[0]:.1f}",
                flush=True,
            )
        plain = min(runs["plain"])
        clf = best
        timed = {"plain": (plain, clf)}
        for label, per_instance, fil, k in configurations(hidden, args.fil_coordinates):
            if label != "plain":
                timed[label] = time_ours(X, y, hidden, epochs, per_instance, fil, k)
            seconds, clf = timed[label]
            rows.append((name, label, epochs, seconds, seconds / plain, clf.epsilon_))
            print(
                f"{name:>10} {label:>22}: {epochs / seconds:6.2f} epochs/s, "
                f"{seconds / plain:5.2f} x plain",
                flush=True,
            )
        for mode, label in OPACUS_MODES.items():
            if mode == "ghost32" and not hidden:
                continue
            if mode in runs:
                opacus = min(runs[mode], default=None)
            else:
                opacus = time_opacus(X, y, hidden, 1, mode)
            if opacus is None:
                break
            rows.append((name, label, 1, opacus, opacus / plain * epochs, None))
            print(
                f"{name:>10} {label:>22}: {1 / opacus:6.2f} epochs/s, "
                f"{opacus / plain * epochs:5.2f} x slower than plain",
                flush=True,
            )
    return rows, alternate


def _reference_accountant():
    """The accountant before its storage became sparse (test support code)."""
    path = HERE.parent / "tests" / "accounting" / "_per_instance_reference.py"
    spec = importlib.util.spec_from_file_location("_per_instance_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ReferencePerInstanceAccountant


def _status_kb(field):
    """A ``kB`` field of ``/proc/self/status`` (``VmRSS``, ``VmHWM``), in bytes."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def _reset_peak_rss():
    """Set the peak resident set (``VmHWM``) to the current one; Linux only.

    ``getrusage``'s ``ru_maxrss`` is no use here: Linux carries it over from
    the parent through ``fork`` and ``exec``.
    """
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def memory_child(n, variant):
    """One fit in this process; prints its memory as JSON (``--memory-child``).

    ``variant``: ``"off"`` (no per-instance accounting), ``"new"`` or ``"old"``
    (the reference accountant patched in).
    """
    import sklearn_fil.neural._dpsgd as dpsgd_module

    if variant == "old":
        dpsgd_module.PerInstanceAccountant = _reference_accountant()
    held = {}

    class Probe(DPSGDClassifier):
        def _per_instance_accountant(self, plan, n):
            held["acc"] = super()._per_instance_accountant(plan, n)
            return held["acc"]

    logging.getLogger("absl").setLevel(logging.ERROR)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, MEMORY_D))
    y = (X @ rng.standard_normal(MEMORY_D) > 0).astype(np.int64)
    params = dict(
        batch_size=BATCH,
        max_iter=MEMORY_EPOCHS,
        fil_accounting=False,
        per_instance_accounting=variant != "off",
        random_state=0,
    )
    Probe(**params).fit(X[:1000], y[:1000])  # compile, fill the caches
    held.clear()
    _reset_peak_rss()
    rss0 = _status_kb("VmRSS")
    tracemalloc.start()
    t0 = time.perf_counter()
    clf = Probe(**params).fit(X, y)
    seconds = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = _status_kb("VmHWM") - rss0
    acc = held.get("acc")
    state = acc.memory_bytes() if hasattr(acc, "memory_bytes") else None
    eps = clf.privacy_report_["epsilon"].to_numpy()
    print(
        json.dumps(
            {
                "peak": peak,
                "rss": rss,
                "state": state,
                "seconds": seconds,
                "eps_mean": float(eps.mean()),
                "eps_max": float(eps.max()),
            }
        )
    )


def memory_rows(args):
    """Bytes per example of each variant at each size, each in a fresh process."""
    rows = []
    for n in args.memory_sizes:
        # the old accountant needs about 3 KB per example: not beyond 10^6
        old = args.old_accountant and n <= 1_000_000
        for variant in ["off", "new"] + (["old"] if old else []):
            out = subprocess.run(
                [sys.executable, __file__, "--memory-child", str(n), variant],
                capture_output=True,
                text=True,
                check=True,
            )
            result = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append((n, variant, result))
            print(f"memory n={n} {variant}: {result}", flush=True)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--mlp-epochs", type=int, default=1)
    parser.add_argument("--fil-coordinates", type=int, default=16)
    parser.add_argument(
        "--memory-sizes", type=int, nargs="*", default=[100_000, 1_000_000]
    )
    parser.add_argument("--old-accountant", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-speed", action="store_true")
    parser.add_argument(
        "--only",
        choices=sorted(ONLY),
        help="time this model alone, no memory runs; write only with --out "
        "(into an existing file: replaces this model's rows, keeps the rest)",
    )
    parser.add_argument("--memory-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.memory_child:
        memory_child(int(args.memory_child[0]), args.memory_child[1])
        return 0
    if args.only is not None:
        args.only = ONLY[args.only]
    elif args.out is None:
        args.out = HERE / "results" / "dpsgd.md"
    logging.getLogger("absl").setLevel(logging.ERROR)  # dp-accounting's notes
    warnings.filterwarnings("ignore", module="opacus")  # its notes per fit
    warnings.filterwarnings("ignore", message="Full backward hook is firing")
    args.load_at_start = os.getloadavg()
    started = time.perf_counter()
    rows, alternate = ([], {}) if args.skip_speed else speed_rows(args)
    memory = [] if args.only is not None else memory_rows(args)
    if args.out is not None:
        elapsed = time.perf_counter() - started
        if args.only is not None and args.out.exists():
            merge_markdown(args, rows, alternate, elapsed)
        else:
            write_markdown(args, rows, alternate, memory, elapsed)
        print(f"wrote {args.out}")
    return 0


def merge_markdown(args, rows, alternate, elapsed):
    """Put one model's rerun into an existing results file (``--only --out``).

    Its rows of the speed table and its line of alternate runs are replaced
    (added if missing); a line after the header says when and how they were
    rerun (replacing the line of an earlier rerun). The other model's rows,
    the memory table and any notes are kept.
    """
    name = args.only
    new_rows = speed_table(rows, alternate)
    table = [line for line in new_rows if line.startswith(f"| {name} |")]
    runs = [line for line in new_rows if line.startswith(f"- {name}: plain")]
    lines = args.out.read_text().splitlines()
    old_table = [i for i, line in enumerate(lines) if line.startswith(f"| {name} |")]
    if old_table:
        lines[old_table[0] : old_table[-1] + 1] = table
    else:  # after the last row of the speed table
        last = max(i for i, line in enumerate(lines) if line.startswith("| "))
        lines[last + 1 : last + 1] = table
    old_runs = [i for i, line in enumerate(lines) if line.startswith(f"- {name}: ")]
    if old_runs:
        lines[old_runs[0] : old_runs[-1] + 1] = runs
    load = ", ".join(f"{v:.1f}" for v in args.load_at_start)
    end = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    note = (
        f"- Rows of {name} rerun at "
        f"{datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')} with "
        f"`python benchmarks/bench_dpsgd.py --epochs {args.epochs} --mlp-epochs "
        f"{args.mlp_epochs} --fil-coordinates {args.fil_coordinates} --repeats "
        f"{args.repeats} --only {name.split()[0]} --out {args.out}` "
        f"on {cpu_name()}, {os.cpu_count()} logical "
        f"(load average {load} at the start, {end} at the end; "
        f"{elapsed / 60:.1f} min); every other row is from the run above"
    )
    earlier = f"- Rows of {name} rerun at "
    lines = [line for line in lines if not line.startswith(earlier)]
    wall = next(i for i, line in enumerate(lines) if line.startswith("- Wall time"))
    lines.insert(wall + 1, note)
    args.out.write_text("\n".join(lines) + "\n")


def write_markdown(args, rows, alternate, memory, elapsed):
    cpu = cpu_name()
    try:
        import opacus

        opacus_version = f"Opacus {opacus.__version__}"
        import torch

        opacus_version += f", PyTorch {torch.__version__}"
    except ImportError:
        opacus_version = "Opacus not installed (no comparison)"
    command = (
        f"python benchmarks/bench_dpsgd.py --epochs {args.epochs} "
        f"--mlp-epochs {args.mlp_epochs} --fil-coordinates {args.fil_coordinates} "
        f"--repeats {args.repeats} "
        f"--memory-sizes {' '.join(str(n) for n in args.memory_sizes)}"
        + (" --old-accountant" if args.old_accountant else "")
        + (" --skip-speed" if args.skip_speed else "")
        + (f" --only {args.only.split()[0]}" if args.only else "")
        + (f" --out {args.out}" if args.only else "")
    )
    lines = [
        "# DP-SGD on CPU: speed and the cost of per-example accounting",
        "",
        f"- Date: {datetime.datetime.now(datetime.UTC).isoformat(timespec='seconds')}",
        f"- Command: `{command}`",
        f"- sklearn-fil {sklearn_fil.__version__}, Python {platform.python_version()},"
        f" NumPy {np.__version__}; {opacus_version}; CPU: {cpu}, "
        f"{os.cpu_count()} logical",
        "- Load average at the start: "
        f"{', '.join(f'{v:.1f}' for v in args.load_at_start)}; at the end: "
        f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}"
        " (the machine was shared with other jobs: compare the ratios within this "
        "run, not absolute times across runs)",
        f"- Wall time of the run: {elapsed / 60:.1f} min",
    ]
    if rows:
        lines += speed_table(rows, alternate)
    if memory:
        lines += memory_table(memory)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")


def speed_table(rows, alternate):
    lines = [
        f"- Data: {N} x {D} standard normal / sqrt({D}), labels from a random "
        f"hyperplane; batch size {BATCH} (Poisson sampling), noise multiplier 1, "
        "clipping bound 1 (GELU for ours, hard for Opacus), learning rate 0.5, "
        "float64; Opacus runs one epoch, with `grad_sample_mode` `hooks` "
        "(per-example gradients) and `ghost` (ghost clipping: norms without "
        "per-example gradients, then a second backward pass; the criterion is "
        "passed to `make_private`); *Opacus ghost clipping, float32* is the same "
        "in PyTorch's default dtype (ours has no float32 mode). Both use every "
        "core (BLAS's default threads; `torch.set_num_threads`). Ours is the "
        "whole `fit`, Opacus' time its training loop alone: ours includes the "
        "input checks and the report's passes over the data, the initial norms "
        "of the examples never sampled (the `grad_norm` column; a full pass "
        "before training with per-instance accounting) and one forward pass of "
        "every example for its final loss and the training accuracy of the "
        "utility check, but not the PLD accountant's epsilon (an "
        "untimed fit first fills its cache; Opacus' "
        "loop computes no epsilon either). *plain* and *Opacus ghost clipping* "
        "(both dtypes for the MLP; for the logistic model, *Opacus hooks*) "
        "are the fastest of `--repeats` alternate runs, every other row one run. "
        "*FIL, all "
        "coordinates* is exact and adds a per-feature column (an n x 784 "
        "accumulator); *FIL, k coordinates* samples k input coordinates per step "
        "for an unbiased trace; *both* is the default with sampled coordinates.",
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
        "Targets: plain DP-SGD ≥ 5 × faster than Opacus on logistic regression and "
        "≥ 1.5 × faster than its ghost clipping (float64) on the MLP (the Opacus rows' "
        "*time per epoch / plain* is that speed-up); FIL accounting ≤ 1.5 × plain "
        "for the logistic model; per-instance accounting ≤ 1.1 × plain.",
        "",
        "Every alternate run of *plain* and Opacus (`ghost`; `ghost32`, ghost "
        "clipping in float32, for the MLP; `hooks` for the logistic model), in "
        "order (seconds for the epochs of the table):",
        "",
    ]
    for name, runs in alternate.items():
        lines.append(
            f"- {name}: "
            + "; ".join(
                f"{label} {', '.join(f'{t:.2f}' for t in times)}"
                for label, times in runs.items()
            )
        )
    return lines


def memory_table(memory):
    by = {(n, v): r for n, v, r in memory}
    lines = [
        "",
        "## Memory of per-instance accounting",
        "",
        f"Logistic regression on n x {MEMORY_D} standard normal features, "
        f"batch size {BATCH} (Poisson), {MEMORY_EPOCHS} epochs, GELU clipping, "
        "no FIL accounting; one fresh process per fit. *Peak* is the largest "
        "total of traced allocations during `fit` (tracemalloc; the data made "
        "before it are not counted), *RSS* the growth of the peak resident set "
        "over the fit (`VmHWM` reset before it, less `VmRSS` then); both per "
        "example. *Accounting* is the fit with "
        "per-instance accounting less the fit without (the same plain work: "
        "data copy, norms, report); *state* the accountant's own arrays "
        "(`PerInstanceAccountant.memory_bytes()`). *old* is the accountant as it "
        "was (dense float64 step counts per level, an n x orders RDP array to "
        "convert).",
        "",
        "| n | accountant | peak B/example | RSS B/example | accounting (peak) "
        "B/example | accounting (RSS) B/example | state B/example | fit s | "
        "mean epsilon |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (n, variant), r in by.items():
        off = by.get((n, "off"))
        extra_peak = extra_rss = ""
        if variant != "off" and off is not None:
            extra_peak = f"{(r['peak'] - off['peak']) / n:.0f}"
            extra_rss = f"{(r['rss'] - off['rss']) / n:.0f}"
        state = "" if r["state"] is None else f"{r['state'] / n:.0f}"
        name = {"off": "none (plain)", "new": "sparse (this version)", "old": "old"}
        lines.append(
            f"| {n:,} | {name[variant]} | {r['peak'] / n:.0f} | {r['rss'] / n:.0f} "
            f"| {extra_peak} | {extra_rss} | {state} | {r['seconds']:.1f} "
            f"| {r['eps_mean']:.4f} |"
        )
    lines += [
        "",
        "Target: per-instance accounting ≤ 200 bytes per example at n = 10⁶ "
        "(so that n = 10⁷ fits a 24 GiB machine).",
    ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
