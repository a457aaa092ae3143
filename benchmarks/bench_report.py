# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
# The markdown output uses typographic signs (multiplication, minus) on purpose.
# ruff: noqa: RUF001
"""Cost of the FIL privacy report of output-perturbed linear models.

For each size and model this script measures, in one run of the script:

* the time of ``OutputPerturbed{Linear,Logistic}Regression.fit`` (which
  includes computing the privacy report),
* the time of :func:`sklearn_fil.fisher.fisher_information_loss` alone, at the
  un-noised minimiser,
* the time of one ``X.T @ X`` on the same ``X`` and the ratio of the two,
* the peak memory of the report call: the ``tracemalloc`` peak (NumPy
  allocations are traced) and the extra process RSS (high-water mark of the
  RSS minus the RSS once ``X`` exists), the latter in a fresh subprocess per
  configuration so that earlier configurations do not pollute it.

At ``n = 10**6, d = 100`` it also times the fit and the report again in a
process that keeps the memory it frees (``KEEP_FREED``: on a virtual machine
that takes freed memory back, every call otherwise faults its fresh memory
in from the host; see :func:`page_reporting`), and breaks the report
(squared loss) and the fits down into their steps. Results are printed as
they come and written to a markdown file.

Usage::

    python benchmarks/bench_report.py [--sizes small|full]
        [--models linear,logistic] [--out benchmarks/results/report.md]

Every configuration runs in its own subprocess (one for the timings, one for
the RSS), so the machine needs memory for one configuration at a time:
about 4 GB at ``n = 10**6, d = 100``.
"""

import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import numpy as np

SIZES = {
    "small": [10_000, 100_000],
    "full": [10_000, 100_000, 1_000_000],
}
DIMS = [20, 100]
MODELS = {"linear": "squared", "logistic": "logistic"}
LAM = 1e-3
SIGMA = 1.0
SEED = 0
# The breakdown's kernel-alone time: every _SAMPLE_EVERY-th block of the
# per-example pass, at most _SAMPLED_BLOCKS of them (copies of their inputs).
_SAMPLE_EVERY = 12
_SAMPLED_BLOCKS = 64
# Below this many seconds a measurement is repeated and the best of 3 kept.
REPEAT_BELOW_S = 10.0
# Measurements shorter than this are repeated beyond 3 runs, until about
# REPEAT_BUDGET_S has been spent (at most MAX_REPEAT runs): one preemption on a
# busy machine would otherwise decide the best of 3 of a millisecond call.
SHORT_S = 0.2
REPEAT_BUDGET_S = 1.0
MAX_REPEAT = 25
GB = 1e9
TARGET_N, TARGET_D = 1_000_000, 100
# Issue 19's targets at n = 10**6, d = 100: the report alone, the fit with its
# report (per model), as multiples of one X.T @ X, and the report's extra RSS.
TARGET_RATIO, TARGET_GB = 6.0, 1.5
TARGET_FIT_RATIO = {"linear": 7.0, "logistic": 12.0}

# glibc settings under which a process keeps the memory it frees (every block
# from the heap, which is never trimmed): the target size's timings are
# repeated under them, for machines that take freed memory back (see
# page_reporting)
KEEP_FREED = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(2**62)}

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "report.md"


# --------------------------------------------------------------------------
# Helpers shared by the workers
# --------------------------------------------------------------------------


def make_data(n, d, model, seed=SEED):
    """Standard normal features, a few badly scaled columns, a GLM target.

    Columns 0..3 are multiplied by 1e-3, 1e-2, 1e2 and 1e3; the true weights
    are divided by the same factors, so each column contributes comparably to
    the margin (of standard deviation about 1). ``y`` is the margin plus
    Gaussian noise (linear) or a Bernoulli draw of its sigmoid (logistic).
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    scales = np.ones(d)
    bad = np.array([1e-3, 1e-2, 1e2, 1e3])[: max(d - 1, 0)]
    scales[: bad.size] = bad
    X[:, : bad.size] *= bad
    beta = rng.standard_normal(d) / np.sqrt(d) / scales
    margin = X @ beta + 0.3
    if model == "linear":
        y = margin + 0.5 * rng.standard_normal(n)
    else:
        y = (rng.random(n) < 1.0 / (1.0 + np.exp(-margin))).astype(np.float64)
    return X, y


def best_time(fn, repeat=3, below=REPEAT_BELOW_S):
    """Best wall time of ``fn()``.

    One run when it takes ``below`` seconds or more, else the best of
    ``repeat`` runs, and of more (up to ``MAX_REPEAT``, about
    ``REPEAT_BUDGET_S`` in all) when a run takes under ``SHORT_S``.
    """
    best = np.inf
    spent = 0.0
    k = 0
    while True:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best = min(best, dt)
        spent += dt
        k += 1
        if k == 1 and dt >= below:
            break
        if k >= repeat and (
            best >= SHORT_S or spent >= REPEAT_BUDGET_S or k >= MAX_REPEAT
        ):
            break
    return best


def warm_up():
    """Compile (or load from cache) the numba kernels and touch every path."""
    import warnings

    from sklearn_fil.linear_model import (
        OutputPerturbedLinearRegression,
        OutputPerturbedLogisticRegression,
    )

    for model in MODELS:
        X, y = make_data(200, 5, model, seed=1)
        w = minimiser(X, y, model)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            report(X, y, w, model)
        est = (
            OutputPerturbedLinearRegression
            if model == "linear"
            else OutputPerturbedLogisticRegression
        )
        est(sigma=SIGMA, lam=LAM, random_state=0).fit(X, y)


def minimiser(X, y, model):
    """Un-noised minimiser ``[coef..., intercept]`` as the estimators fit it."""
    from sklearn_fil._glm import fit_glm

    w, _ = fit_glm(
        X, y, np.ones(X.shape[0]), MODELS[model], LAM, True, False, 1e-10, 100
    )
    return w


def report(X, y, w, model):
    from sklearn_fil.fisher import fisher_information_loss

    return fisher_information_loss(
        X, y, w[:-1], w[-1], loss=MODELS[model], lam=LAM, sigma=SIGMA
    )


def fit(X, y, model):
    from sklearn_fil.linear_model import (
        OutputPerturbedLinearRegression,
        OutputPerturbedLogisticRegression,
    )

    est = (
        OutputPerturbedLinearRegression
        if model == "linear"
        else OutputPerturbedLogisticRegression
    )
    return est(sigma=SIGMA, lam=LAM, random_state=0).fit(X, y)


def current_rss():
    """Current resident set size in bytes (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def max_rss():
    """High-water mark of the RSS in bytes (``ru_maxrss`` is in KiB on Linux)."""
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


# --------------------------------------------------------------------------
# Workers (each runs in its own subprocess)
# --------------------------------------------------------------------------


def worker_time(n, d, model, w_path, breakdown):
    """Timings and tracemalloc peak of one configuration."""
    load0 = os.getloadavg()[0]
    warm_up()
    X, y = make_data(n, d, model)
    w = minimiser(X, y, model)
    np.save(w_path, w)

    res = {"n": n, "d": d, "model": model}
    n_iter = []

    faults = {"fit": [], "report": []}

    def counted(kind, call):
        """``call()``, its page faults (``ru_minflt``) appended to ``faults``."""
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        out = call()
        faults[kind].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return out

    def run_fit():
        n_iter.append(counted("fit", lambda: fit(X, y, model)).n_iter_)

    # The reference is timed before, between and after the fits and the
    # reports (the best of all kept): on a shared machine whose load changes
    # over minutes, one series of it can fall in a busy minute that the fits
    # missed. The fits and the reports each run in a series of their own, as
    # a user's calls would (see page_reporting for what fresh memory costs on
    # a machine that takes freed memory back). The reference is always the
    # best of its runs, even above 10 s: a slow run of it is a preempted one,
    # not a property of X.
    xtx = [best_time(lambda: X.T @ X, below=np.inf)]
    res["fit_s"] = best_time(run_fit)
    res["fit_iters"] = int(n_iter[-1])
    xtx.append(best_time(lambda: X.T @ X, below=np.inf))
    res["report_s"] = best_time(
        lambda: counted("report", lambda: report(X, y, w, model))
    )
    xtx.append(best_time(lambda: X.T @ X, below=np.inf))
    res["xtx_s"] = min(xtx)
    res["faults"] = {kind: min(counts) for kind, counts in faults.items()}

    tracemalloc.start()
    out = report(X, y, w, model)
    res["tracemalloc_gb"] = tracemalloc.get_traced_memory()[1] / GB
    tracemalloc.stop()
    del out
    res["load"] = max(load0, os.getloadavg()[0])
    if breakdown:
        if model == "linear":
            res["breakdown"] = time_breakdown(X, y, w, model)
        res["fit_breakdown"] = fit_breakdown(X, y, model)
    return res


# The steps of a fit listed by its breakdown, in the order they run:
# (path suffix of the function's module, function name, what it does).
FIT_STEPS = [
    ("linear_model/_base.py", "_prepare", "validation (one pass: extremes, finite)"),
    ("_glm.py", "fit_glm", "the minimiser (Newton)"),
    ("fisher/_engine.py", "fisher_information_loss", "the report's FIL engine"),
    ("_report.py", "attribute_variances", "column variances"),
    ("_leave_one_out.py", "leave_one_out", "exact leave-one-out Δᵢ"),
    ("linear_model/_per_instance.py", "_epsilon", "per-example ε"),
    ("_report.py", "relative_mse_bound", "`rel_mse_bound` column"),
    ("_report.py", "make_privacy_report", "the DataFrame"),
]


def fit_breakdown(X, y, model):
    """Where the time of one fit goes: the cumulative times of ``FIT_STEPS``.

    One profiled fit (cProfile sees the calling thread only, so a step's time
    is its wall time, its parallel segments included).
    """
    import cProfile
    import pstats

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.runcall(fit, X, y, model)
    total = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats  # (file, line, name) -> (.., cumtime, ..)
    steps = []
    for suffix, name, label in FIT_STEPS:
        cum = sum(
            v[3]
            for (file, _, func), v in stats.items()
            if func == name and file.replace(os.sep, "/").endswith(suffix)
        )
        steps.append((name, label, cum))
    return {"total": total, "steps": steps}


def time_breakdown(X, y, w, model):
    """Where the time of one report goes, by instrumenting the engine.

    The engine looks its helpers up as module globals at call time, so
    wrapping them in timers inside this process measures the real steps of a
    real report call; the same steps are also reproduced with plain NumPy on
    the same shapes, next to the reference products.
    """
    import numba
    from sklearn.utils import gen_batches

    import sklearn_fil._glm as glm
    import sklearn_fil.fisher._engine as engine
    from sklearn_fil.fisher import _kernels

    n, d = X.shape
    p = d + 1
    rng = np.random.default_rng(1)
    out = {}

    # Instrumented report: accumulate the time spent in each wrapped helper.
    # The per-example pass runs its blocks on several threads: its GEMM and
    # kernel times are thread-seconds (summed over the threads), its own
    # time is wall time.
    spent = dict.fromkeys(("gram", "pass", "gemm", "kernel", "sums", "top_eig"), 0.0)
    calls = {key: 0 for key in spent}
    originals = {
        "gram": (glm, "weighted_grams", glm.weighted_grams),
        "pass": (engine, "_per_example_pass", engine._per_example_pass),
        "gemm": (engine, "_matmul_into", engine._matmul_into),
        "kernel": (_kernels, "per_example_fil", _kernels.per_example_fil),
        "sums": (_kernels, "gradient_sums", _kernels.gradient_sums),
        "top_eig": (engine, "_top_eig", engine._top_eig),
    }
    lock = threading.Lock()
    # copies of the kernel's inputs of every _SAMPLE_EVERY-th block of the
    # first call (the pass reuses its buffers, so views would change)
    sampled = []

    def timed(key, func):
        def wrapper(*args, **kwargs):
            if key == "kernel" and calls["kernel"] % _SAMPLE_EVERY == 0:
                if len(sampled) < _SAMPLED_BLOCKS:
                    with lock:
                        sampled.append(
                            [a.copy() if isinstance(a, np.ndarray) else a for a in args]
                        )
            t0 = time.perf_counter()
            try:
                return func(*args, **kwargs)
            finally:
                with lock:
                    spent[key] += time.perf_counter() - t0
                    calls[key] += 1

        return wrapper

    best = None
    try:
        for key, (mod, name, func) in originals.items():
            setattr(mod, name, timed(key, func))
        for _ in range(3):
            for key in spent:
                spent[key] = 0.0
                calls[key] = 0
            t0 = time.perf_counter()
            report(X, y, w, model)
            total = time.perf_counter() - t0
            if best is None or total < best["total"]:
                best = dict(spent, total=total, calls=dict(calls))
    finally:
        for mod, name, func in originals.values():
            setattr(mod, name, func)
    out["instrumented"] = best
    out["threads"] = glm.blas_threads()

    # Statement-level times of the engine function (one call).
    out["lines"] = line_times(
        engine.fisher_information_loss, lambda: report(X, y, w, model)
    )[:12]

    # NumPy reproductions on the same shapes.
    rot = rng.standard_normal((d, p + d))

    def gemm():
        for sl in gen_batches(n, 2**15):
            X[sl] @ rot

    # The kernel alone on blocks sampled across the data, one after another
    # on one numba thread with no BLAS call in between (their inputs from
    # memory, not from the cache a GEMM just wrote them to), scaled to n
    # rows shared by the threads.
    rows = sum(args[0].shape[0] for args in sampled)
    kernel = originals["kernel"][2]
    numba_threads = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        one = best_time(lambda: [kernel(*args) for args in sampled])
    finally:
        numba.set_num_threads(numba_threads)
    out["kernel_alone"] = one * n / rows / out["threads"]
    out["kernel_alone_rows"] = rows

    u, v, r = rng.standard_normal((3, n))

    def sums():
        return X.T @ u, X.T @ v, np.abs(X).T @ np.abs(r)

    M = rng.standard_normal((d, d))
    out["numpy"] = {
        "xtx": best_time(lambda: X.T @ X, below=np.inf),
        "xm": best_time(lambda: X @ M),
        "gemm": best_time(gemm),
        "sums": best_time(sums),
    }
    return out


def statement_lines(func):
    """Map each source line of ``func`` to the first line of its statement.

    Compound statements (``for``, ``if``, ``with``...) own only their header
    lines, so time inside a loop is charged to the statements of its body.
    """
    import ast
    import inspect
    import textwrap

    lines, first = inspect.getsourcelines(func)
    tree = ast.parse(textwrap.dedent("".join(lines)))
    owner = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(
            node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        ):
            continue
        body_start = min(
            (
                child.lineno
                for field in ("body", "orelse", "finalbody", "handlers")
                for child in getattr(node, field, []) or []
            ),
            default=node.end_lineno + 1,
        )
        end = node.end_lineno if body_start > node.end_lineno else body_start - 1
        for line in range(node.lineno, end + 1):
            span = end - node.lineno
            if line not in owner or span < owner[line][1]:
                owner[line] = (node.lineno, span)
    offset = first - 1
    source = {k + first: text.strip() for k, text in enumerate(lines)}
    return {k + offset: v[0] + offset for k, v in owner.items()}, source


def line_times(func, call):
    """Wall time spent on each statement of ``func`` during ``call()``.

    A ``sys.settrace`` hook on ``func``'s frames only: time inside a callee
    (NumPy, numba, helpers) is charged to the calling statement.
    """
    code = func.__code__
    spent = {}
    state = {"line": None, "t": 0.0}

    def local(frame, event, arg):
        now = time.perf_counter()
        if state["line"] is not None:
            spent[state["line"]] = spent.get(state["line"], 0.0) + now - state["t"]
        state["line"] = frame.f_lineno if event == "line" else None
        state["t"] = time.perf_counter()
        return local

    def hook(frame, event, arg):
        return local if frame.f_code is code else None

    old = sys.gettrace()
    sys.settrace(hook)
    try:
        call()
    finally:
        sys.settrace(old)
    owner, source = statement_lines(func)
    by_stmt = {}
    for line, t in spent.items():
        key = owner.get(line, line)
        by_stmt[key] = by_stmt.get(key, 0.0) + t
    return [
        (line, source.get(line, "?"), t)
        for line, t in sorted(by_stmt.items(), key=lambda kv: -kv[1])
    ]


def worker_mem(n, d, model, w_path):
    """Extra RSS of one report call: RSS high-water minus RSS once X exists."""
    warm_up()
    X, y = make_data(n, d, model)
    w = np.load(w_path)
    base = current_rss()
    hwm_before = max_rss()
    out = report(X, y, w, model)
    peak = max_rss()
    del out
    return {
        "rss_base_gb": base / GB,
        "rss_hwm_before_gb": hwm_before / GB,
        "rss_peak_gb": peak / GB,
        "rss_extra_gb": (peak - base) / GB,
    }


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------


def run_worker(kind, n, d, model, w_path, breakdown=False, env=None):
    """Run a worker in a subprocess (its environment updated by ``env``)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        json_path = f.name
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--_worker",
        kind,
        "--_n",
        str(n),
        "--_d",
        str(d),
        "--_model",
        model,
        "--_w",
        w_path,
        "--_json",
        json_path,
    ]
    if breakdown:
        cmd.append("--_breakdown")
    try:
        subprocess.run(cmd, check=True, env={**os.environ, **(env or {})})
        with open(json_path) as f:
            return json.load(f)
    finally:
        os.unlink(json_path)


def source_digest():
    """Digest of the package's sources, to notice edits made during the run."""
    import hashlib

    import sklearn_fil

    digest = hashlib.sha256()
    for path in sorted(Path(sklearn_fil.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


# VIRTIO_BALLOON_F_REPORTING, the feature bit of free page reporting
_BALLOON_F_REPORTING = 5


def page_reporting():
    """How this machine takes freed memory back, in words; None if it does not.

    A virtual machine with a virtio balloon that reports free pages hands
    the memory its kernel frees (in blocks of ``2**order`` pages) back to
    the host; touching it again faults it in from the host, which costs
    far more than a fresh page on bare metal. A process that allocates
    fresh memory for each call (the report's ``n x (d + 1)`` output) pays
    that on every call once glibc has given the last call's memory back.
    """
    order = Path("/sys/module/page_reporting/parameters/page_reporting_order")
    balloons = Path("/sys/bus/virtio/drivers/virtio_balloon").glob("virtio*")
    try:
        # the device's negotiated features, bit k the k-th character
        features = [(dev / "features").read_text() for dev in balloons]
        if not any(f[_BALLOON_F_REPORTING] == "1" for f in features):
            return None
        pages = 2 ** int(order.read_text())
    except (OSError, ValueError, IndexError):
        return None
    size = pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    return f"virtio balloon, {size:g} MiB blocks"


def machine_info():
    import numba
    import threadpoolctl

    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import scipy.linalg  # noqa: F401  (the engine's LAPACK may be a second BLAS)

    np.ones((2, 2)) @ np.ones((2, 2))  # make sure BLAS is loaded
    blas = [
        f"{Path(info.get('filepath', '?')).parent.name}: "
        f"{info.get('internal_api')} {info.get('version')} "
        f"({info.get('threading_layer', 'n/a')} threading, "
        f"{info.get('num_threads')} threads, {info.get('architecture', '?')})"
        for info in threadpoolctl.threadpool_info()
        if info.get("user_api") == "blas"
    ]
    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    # Noise probe: small BLAS calls suffer most from busy cores.
    A = np.random.default_rng(0).standard_normal((101, 101))
    small = {}
    for threads in (None, 1):
        with threadpoolctl.threadpool_limits(threads, user_api="blas"):
            small[threads] = (
                best_time(lambda: [A @ A for _ in range(100)], repeat=5) / 100
            )
    try:
        repo = HERE.parent
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(repo), "status", "--porcelain", "--", "sklearn_fil"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        version = head + (" (sklearn_fil/ has uncommitted changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        version = "unknown"
    return {
        "version": version,
        "digest": source_digest(),
        "small_matmul_ms": small[None] * 1e3,
        "small_matmul_1t_ms": small[1] * 1e3,
        "load_start": os.getloadavg(),
        "cpu": cpu,
        "cores": f"{os.cpu_count()} logical ({affinity} usable)",
        "blas": "; ".join(blas) or "unknown",
        "page_reporting": page_reporting(),
        "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
    }


# (header, width, format of the value)
COLUMNS = [
    ("n", 8, "d"),
    ("d", 4, "d"),
    ("model", 9, "s"),
    ("fit s", 8, "secs"),
    ("Newton it", 9, "d"),
    ("report s", 9, "secs"),
    ("XᵀX s", 8, "secs"),
    ("report/XᵀX", 10, ".1f"),
    ("fit/XᵀX", 8, ".1f"),
    ("report peak extra GB (RSS)", 26, ".2f"),
    ("report peak GB (tracemalloc)", 28, ".2f"),
    ("load avg", 8, ".1f"),
]


def row_values(r):
    return [
        r["n"],
        r["d"],
        r["model"],
        r["fit_s"],
        r["fit_iters"],
        r["report_s"],
        r["xtx_s"],
        r["report_s"] / r["xtx_s"],
        r["fit_s"] / r["xtx_s"],
        r["rss_extra_gb"],
        r["tracemalloc_gb"],
        r["load"],
    ]


def print_header():
    print("  ".join(f"{name:>{width}}" for name, width, _ in COLUMNS), flush=True)


def secs(t):
    """Seconds to three significant digits, without an exponent."""
    return np.format_float_positional(t, precision=3, fractional=False, trim="-")


def print_row(r):
    print(
        "  ".join(
            f"{secs(v) if spec == 'secs' else format(v, spec):>{width}}"
            for (_, width, spec), v in zip(COLUMNS, row_values(r), strict=True)
        ),
        flush=True,
    )


def target_verdict(rows):
    hits = [r for r in rows if r["n"] == TARGET_N and r["d"] == TARGET_D]
    if not hits:
        return "NOT EVALUATED (n = 10⁶, d = 100 was not run)", []

    def check(value, target, unit=""):
        return (
            value <= target,
            f"{value:.2f}{unit} ({'≤' if value <= target else '>'} {target:g}{unit})",
        )

    lines = []
    ok_all = True
    for r in hits:
        report_ok, report = check(r["report_s"] / r["xtx_s"], TARGET_RATIO)
        fit_ok, fit = check(r["fit_s"] / r["xtx_s"], TARGET_FIT_RATIO[r["model"]])
        mem_ok, mem = check(r["rss_extra_gb"], TARGET_GB, " GB")
        ok = report_ok and fit_ok and mem_ok
        ok_all &= ok
        lines.append(
            f"{r['model']}: report/XᵀX = {report}, fit + report/XᵀX = {fit}, "
            f"report extra RSS = {mem}: {'MET' if ok else 'NOT MET'}"
        )
    return ("MET" if ok_all else "NOT MET"), lines


def kept_markdown(rows, kept, info):
    """The target size's timings with freed memory returned and kept."""
    reporting = info["page_reporting"] or "no free page reporting was found"
    md = [
        "",
        "## Freed memory returned or kept (n = 10⁶, d = 100)",
        "",
        "Each fit and report allocates fresh memory: the report's n × (d + 1) "
        "output (0.81 GB here) and its n-vectors. glibc gives the blocks a "
        "process frees back to the kernel; on a virtual machine that reports "
        f"free pages (here: {reporting}) the kernel hands them on to the host, "
        "and touching them again faults them in from the host. The rows above "
        "ran with glibc's defaults (*returned*); the same timings were then "
        "run in a process that keeps the memory it frees (*kept*: "
        + ", ".join(f"`{k}={v}`" for k, v in KEEP_FREED.items())
        + "), which is what a machine that does not take memory back costs, "
        "less the zeroing of fresh pages. Page faults: the fewest of one call "
        "(`ru_minflt`).",
        "",
        "| model | freed memory | fit s | report s | XᵀX s | report/XᵀX | "
        "fit/XᵀX | page faults, fit | page faults, report |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if r["n"] != TARGET_N or r["d"] != TARGET_D or r["model"] not in kept:
            continue
        for label, t in (("returned", r), ("kept", kept[r["model"]])):
            md.append(
                f"| {r['model']} | {label} | {secs(t['fit_s'])} | "
                f"{secs(t['report_s'])} | {secs(t['xtx_s'])} | "
                f"{t['report_s'] / t['xtx_s']:.1f} | {t['fit_s'] / t['xtx_s']:.1f} | "
                f"{t['faults']['fit']} | {t['faults']['report']} |"
            )
    return md


def fmt_n(n):
    e = round(np.log10(n))
    return f"10^{e}" if 10**e == n else str(n)


def write_markdown(path, info, command, started, elapsed, rows, breakdown, notes):
    verdict, verdict_lines = target_verdict(rows)
    md = []
    md.append("# Cost of the FIL privacy report\n")
    md.append(f"- Date: {started}")
    md.append(f"- Command: `{command}`")
    md.append(
        f"- sklearn-fil version: git {info['version']}; digest of "
        f"`sklearn_fil/**/*.py` {info['digest']}"
    )
    md.append(f"- Wall time of the whole run: {elapsed / 60:.1f} min")
    md.append(f"- CPU: {info['cpu']}, {info['cores']}")
    md.append(f"- BLAS (threadpoolctl): {info['blas']}")
    md.append(
        "- Free page reporting (freed memory goes back to the host): "
        + (info["page_reporting"] or "none found")
    )
    md.append(
        f"- Python {info['python']}, NumPy {info['numpy']}, numba {info['numba']} "
        f"({info['numba_threads']} threads)"
    )
    md.append(
        f"- Data: standard normal X with columns 0-3 scaled by 1e-3, 1e-2, 1e2, 1e3; "
        f"y linear + N(0, 0.25) noise, or Bernoulli(sigmoid) for logistic; seed {SEED}."
    )
    md.append(
        f"- Models: `OutputPerturbed{{Linear,Logistic}}Regression(sigma={SIGMA}, "
        f"lam={LAM}, random_state=0)` with an intercept."
    )
    md.append(
        "- Times are the best of 3 runs (a single run when the first took 10 s or "
        f"more; calls under {SHORT_S:g} s are repeated up to {MAX_REPEAT} times, about "
        f"{REPEAT_BUDGET_S:g} s in all, so that one preemption does not decide "
        "them); `X.T @ X` is the best of 3 runs before, 3 between and 3 after the "
        "fits and the reports, so that a ratio does not set a quiet minute against "
        "a busy one. *report* is `fisher_information_loss` alone at the un-noised "
        "minimiser; *fit* includes the report and the DataFrame. Extra RSS is the "
        "process RSS high-water mark after the report minus the RSS once X exists, "
        "measured in a fresh subprocess per row; the tracemalloc peak counts the "
        "NumPy allocations made during the report call."
    )
    load0 = ", ".join(f"{x:.1f}" for x in info["load_start"])
    load1 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    md.append(
        f"- Load average (1, 5, 15 min) at the start: {load0}; at the end: {load1}. "
        f"One 101 × 101 matmul at the start: {info['small_matmul_ms']:.3f} ms with the "
        f"default BLAS threads, {info['small_matmul_1t_ms']:.3f} ms with 1 thread "
        "(a large gap means busy cores: small BLAS calls then wait for threads)."
    )
    md.append(
        "- *load avg* column: the largest 1-minute load average seen at the start "
        "and end of that row's timings (this run itself accounts for up to about "
        "the number of cores); well above that, other processes "
        "competed for the CPU and the row's absolute times are inflated."
    )
    for note in notes:
        md.append(f"- Note: {note}")
    md.append("")
    md.append("## Results\n")
    md.append("| " + " | ".join(name for name, _, _ in COLUMNS) + " |")
    md.append("|" + "|".join("---:" for _ in COLUMNS) + "|")
    for r in rows:
        v = row_values(r)
        cells = [
            fmt_n(v[0]),
            str(v[1]),
            v[2],
            secs(v[3]),
            str(v[4]),
            secs(v[5]),
            secs(v[6]),
            f"{v[7]:.1f}",
            f"{v[8]:.1f}",
            f"{v[9]:.2f}",
            f"{v[10]:.2f}",
            f"{v[11]:.1f}",
        ]
        md.append("| " + " | ".join(cells) + " |")
    md.append("")
    md.append(
        f"**Targets** at n = 10⁶, d = 100, as multiples of one X.T @ X: the report "
        f"≤ {TARGET_RATIO:g} ×; the fit with its report ≤ "
        f"{TARGET_FIT_RATIO['linear']:g} × (linear), "
        f"≤ {TARGET_FIT_RATIO['logistic']:g} × (logistic); the report's extra RSS "
        f"≤ {TARGET_GB:g} GB: **{verdict}**"
    )
    for line in verdict_lines:
        md.append(f"- {line}")
    md.append("")
    if breakdown is not None:
        inst, ref = breakdown["instrumented"], breakdown["numpy"]
        total = inst["total"]
        other = total - inst["gram"] - inst["pass"] - inst["top_eig"]
        xtx = ref["xtx"]
        threads = breakdown["threads"]
        md.append("## Where the time goes (n = 10⁶, d = 100, squared loss)\n")
        md.append(
            "Engine steps were timed inside real report calls (timers wrapped "
            "around the engine's helpers; best of 3 calls by total); the NumPy "
            "column reproduces the same step on the same shapes. p = d + 1 = 101. "
            f"The per-example pass runs its blocks on {threads} threads at once: "
            "the GEMM and kernel rows under it are thread-seconds, summed over "
            "the threads, so they add up to about "
            f"{threads} × its wall time.\n"
        )
        md.append("| step | in the engine, s | NumPy reproduction, s | × one XᵀX |")
        md.append("|---|---:|---:|---:|")

        def line(name, eng, num):
            base = eng if eng is not None else num
            e = "" if eng is None else f"{eng:.3f}"
            m = "" if num is None else f"{num:.3f}"
            md.append(f"| {name} | {e} | {m} | {base / xtx:.2f} |")

        line("reference: one `X.T @ X` (syrk, n·p² / 2 multiply-adds)", None, xtx)
        line(
            "reference: one `X @ M`, M random p × p (gemm, n·p² multiply-adds)",
            None,
            ref["xm"],
        )
        line("lower bound: two n × p × p products (2 × `X @ M`)", None, 2 * ref["xm"])
        line(
            "(a) Hessian Gram `weighted_grams` (segments of rows on one-thread "
            "BLAS calls in parallel)",
            inst["gram"],
            None,
        )
        line(
            "(b) per-example pass: each cache-sized block's GEMM `X @ [p × (p+d)]`, "
            "then the kernel on it, blocks in parallel (wall time); NumPy column: "
            "the same products by `X[rows] @ M` in 2¹⁵-row chunks",
            inst["pass"],
            ref["gemm"],
        )
        line("  of which the GEMMs (thread-seconds)", inst["gemm"], None)
        line(
            "  of which numba kernel `per_example_fil` (thread-seconds)",
            inst["kernel"],
            None,
        )
        line(
            f"(c′) the kernel alone: {breakdown['kernel_alone_rows']} rows of blocks "
            "sampled across the data, on one thread with no BLAS call in between "
            f"(inputs from memory), scaled to n rows / {threads}",
            None,
            breakdown["kernel_alone"],
        )
        line(
            f"(d) `_top_eig` eigvalsh calls ({inst['calls']['top_eig']}) for the "
            "attribute and data-set totals",
            inst["top_eig"],
            None,
        )
        line(
            "(e) everything else (validation, stationarity check, inverse, eigh "
            "and SVD of p × p matrices, mse_bound)",
            other,
            None,
        )
        line(
            "  of which the numba `gradient_sums` (X^T u, X^T v and abs(X)^T abs(r) "
            "in one pass: the gradient, s and the stationarity scale); numpy "
            "column: the three products, incl. the abs(X) copy",
            inst["sums"],
            ref["sums"],
        )
        line("report total", total, None)
        md.append("")
        floor = xtx + 2 * ref["xm"]
        md.append(
            f"Arithmetic floor of this formulation on this machine: one `X.T @ X` "
            f"plus two n × p × p products = {floor:.3f} s = {floor / xtx:.1f} × one "
            f"XᵀX (the two products alone: {2 * ref['xm'] / xtx:.1f} ×; the report's "
            f"target: {TARGET_RATIO:g} ×). The kernel's thread-seconds inside the "
            f"report were {inst['kernel'] / threads / breakdown['kernel_alone']:.1f} "
            "× those of the kernel alone."
        )
        md.append("")
        md.extend(floors_markdown(xtx, ref["xm"], breakdown["kernel_alone"]))
        md.append(
            "Slowest statements of `fisher_information_loss` in one more call "
            "(a line tracer on the engine's frame; a callee's time is charged to "
            "the calling statement, a loop's time to the statements of its body; "
            "line numbers in `sklearn_fil/fisher/_engine.py`):\n"
        )
        md.append("| line | statement (first line) | s | × one XᵀX |")
        md.append("|---:|---|---:|---:|")
        for lineno, text, t in breakdown["lines"]:
            text = text.replace("|", "\\|")
            md.append(f"| {lineno} | `{text[:90]}` | {t:.3f} | {t / xtx:.2f} |")
        md.append("")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(md) + "\n")
    return verdict


# The BLAS passes each target's computation makes: (weighted Grams, which;
# n x p x p products, which). All are needed by the exact report and its
# leave-one-out; the logistic fit's two Newton systems are the fewest that
# reach rounding from the subsample's start on the benchmark's data (a second
# is the last full step of fit_glm's stopping rule).
PRODUCTS = "X [Phi, H^-2] (the per-example pass)"
FLOOR_PASSES = {
    ("report", "linear"): (1, "H", 2, PRODUCTS),
    ("report", "logistic"): (3, "H, C2, C0 (the totals)", 2, PRODUCTS),
    ("fit", "linear"): (1, "H, shared", 3, PRODUCTS + "; X H^-1 (leave-one-out)"),
    ("fit", "logistic"): (5, "the report's; 2 Newton systems", 2, PRODUCTS),
}


def floors_markdown(xtx, xm, kernel):
    """Each target beside the time of the BLAS passes it makes, in this run."""
    md = [
        "Each target beside the time of the BLAS passes it makes, from this "
        "run's reference timings (a weighted Gram counted as one "
        "`X.T @ X`, an estimate: the engine takes several in one pass for less, "
        "and one alone for more; an n × p × p product as one `X @ M`), "
        "then with the per-example kernel alone added (our code, so not a hard "
        "floor):\n",
        "| target | × one XᵀX | its BLAS passes × | + the kernel alone × | Grams | "
        "n × p × p products |",
        "|---|---:|---:|---:|---|---|",
    ]
    for (what, model), passes in FLOOR_PASSES.items():
        grams, gram_text, products, product_text = passes
        target = TARGET_RATIO if what == "report" else TARGET_FIT_RATIO[model]
        blas = grams + products * xm / xtx
        label = "report" if what == "report" else "fit + report"
        md.append(
            f"| {label}, {model} | {target:g} | {blas:.1f} | "
            f"{blas + kernel / xtx:.1f} | {grams}: {gram_text} | "
            f"{products}: {product_text} |"
        )
    md.append("")
    return md


def fit_breakdown_markdown(fit_breakdowns):
    """The fit breakdown section: one table per model, in seconds and X^T X."""
    md = [
        f"## Where the time of a fit goes (n = 10⁶, d = {TARGET_D})\n",
        "One more fit of each model under cProfile (which slows it slightly); "
        "each step's cumulative wall time, its parallel segments included. The "
        "engine's row includes its per-example pass (see above); the rest of "
        "the fit is Python and p × p algebra.\n",
    ]
    for model, (fb, xtx) in fit_breakdowns.items():
        md.append(f"**{model}** (one XᵀX: {xtx:.3f} s)\n")
        md.append("| step | function | s | × one XᵀX |")
        md.append("|---|---|---:|---:|")
        listed = 0.0
        for name, label, t in fb["steps"]:
            if t > 0:
                md.append(f"| {label} | `{name}` | {t:.3f} | {t / xtx:.2f} |")
                listed += t
        other = fb["total"] - listed
        md.append(f"| everything else |  | {other:.3f} | {other / xtx:.2f} |")
        md.append(
            f"| fit total (profiled) |  | {fb['total']:.3f} | {fb['total'] / xtx:.2f} |"
        )
        md.append("")
    return md


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", choices=sorted(SIZES), default="full")
    parser.add_argument("--models", default="linear,logistic")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument(
        "--logistic-1e6-d100-only",
        action="store_true",
        help="at n = 10^6 run the logistic model only with d = 100 (saves time)",
    )
    parser.add_argument("--no-breakdown", action="store_true")
    # internal: worker subprocesses
    parser.add_argument("--_worker", choices=["time", "mem"], help=argparse.SUPPRESS)
    parser.add_argument("--_n", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--_d", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--_model", help=argparse.SUPPRESS)
    parser.add_argument("--_w", help=argparse.SUPPRESS)
    parser.add_argument("--_json", help=argparse.SUPPRESS)
    parser.add_argument("--_breakdown", action="store_true", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args._worker is not None:
        if args._worker == "time":
            res = worker_time(args._n, args._d, args._model, args._w, args._breakdown)
        else:
            res = worker_mem(args._n, args._d, args._model, args._w)
        with open(args._json, "w") as f:
            json.dump(res, f)
        return 0

    models = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = set(models) - set(MODELS)
    if unknown or not models:
        raise SystemExit(
            f"--models must be a subset of {sorted(MODELS)}; got {args.models!r}"
        )
    command = "python " + " ".join(
        [os.path.relpath(__file__)] + (sys.argv[1:] if argv is None else list(argv))
    )
    started = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    t_start = time.perf_counter()
    info = machine_info()
    print(f"# {started}  {info['cpu']}, {info['cores']}", flush=True)
    print(f"# BLAS: {info['blas']}", flush=True)
    print(
        f"# Free page reporting: {info['page_reporting'] or 'none found'}", flush=True
    )
    notes = []
    if args.logistic_1e6_d100_only:
        notes.append(
            "to keep the run short, the logistic model at n = 10⁶ was run with "
            "d = 100 only."
        )
    configs = []
    for n in SIZES[args.sizes]:
        for d in DIMS:
            for model in models:
                if (
                    args.logistic_1e6_d100_only
                    and model == "logistic"
                    and n == TARGET_N
                    and d != TARGET_D
                ):
                    continue
                configs.append((n, d, model))

    rows = []
    kept = {}
    breakdown = None
    fit_breakdowns = {}
    print_header()
    with tempfile.TemporaryDirectory() as tmp:
        for n, d, model in configs:
            w_path = os.path.join(tmp, f"w_{n}_{d}_{model}.npy")
            want_breakdown = not args.no_breakdown and n == TARGET_N and d == TARGET_D
            res = run_worker("time", n, d, model, w_path, breakdown=want_breakdown)
            res.update(run_worker("mem", n, d, model, w_path))
            if "breakdown" in res:
                breakdown = res.pop("breakdown")
            if "fit_breakdown" in res:
                fit_breakdowns[model] = (res.pop("fit_breakdown"), res["xtx_s"])
            rows.append(res)
            print_row(res)
            if n == TARGET_N and d == TARGET_D:
                kept[model] = run_worker("time", n, d, model, w_path, env=KEEP_FREED)
                kept[model]["model"] = f"{model}, freed memory kept"
                print_row({**kept[model], "rss_extra_gb": res["rss_extra_gb"]})
    elapsed = time.perf_counter() - t_start
    if source_digest() != info["digest"]:
        notes.append(
            "**the sources of sklearn_fil changed during the run** (digest "
            f"{info['digest']} -> {source_digest()}): rows may mix versions; "
            "rerun."
        )
        print("# WARNING: sklearn_fil sources changed during the run", flush=True)
    verdict = write_markdown(
        args.out, info, command, started, elapsed, rows, breakdown, notes
    )
    if kept:
        with open(args.out, "a") as f:
            f.write("\n".join(kept_markdown(rows, kept, info)) + "\n")
    if fit_breakdowns:
        with open(args.out, "a") as f:
            f.write("\n".join(fit_breakdown_markdown(fit_breakdowns)) + "\n")
        for line in fit_breakdown_markdown(fit_breakdowns):
            print(line, flush=True)
    if breakdown is not None:
        inst, ref = breakdown["instrumented"], breakdown["numpy"]
        print(
            "\n# Where the time goes (n = 10^6, d = 100, squared), seconds", flush=True
        )
        print(f"  X.T @ X            {ref['xtx']:.3f}")
        print(f"  X @ M (p x p)      {ref['xm']:.3f}")
        print(f"  (a) Gram           {inst['gram']:.3f}")
        print(
            f"  (b) per-example    {inst['pass']:.3f}  (numpy GEMM {ref['gemm']:.3f})"
        )
        print(f"      GEMM thread-s  {inst['gemm']:.3f}")
        print(f"      kernel thread-s {inst['kernel']:.3f}")
        print(
            f"  (c') kernel alone  {breakdown['kernel_alone']:.3f}  "
            f"(from {breakdown['kernel_alone_rows']} sampled rows)"
        )
        print(
            f"  (d) _top_eig       {inst['top_eig']:.3f}  "
            f"({inst['calls']['top_eig']} calls)"
        )
        other = inst["total"] - inst["gram"] - inst["pass"] - inst["top_eig"]
        print(f"  (e) other          {other:.3f}  (gradient sums {inst['sums']:.3f})")
        print(f"  report total       {inst['total']:.3f}", flush=True)
        print("# slowest statements of fisher_information_loss (one call)")
        for lineno, text, t in breakdown["lines"]:
            print(f"  {t:7.3f}  L{lineno}: {text[:80]}", flush=True)
    print(
        f"\n# Target: {verdict}; wrote {args.out} in {elapsed / 60:.1f} min", flush=True
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
