# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
# The markdown output uses typographic signs (multiplication) on purpose.
# ruff: noqa: RUF001
"""Cold start: ``sklearn-fil report`` with an empty numba cache, and the import.

Every run is a fresh interpreter (a subprocess), timed from its start to its
exit, as a user waits for it:

* *cold*: ``sklearn-fil report`` (the CLI's default run: the bundled
  breast-cancer data, 569 x 30, logistic with ``--data-norm 1``) with
  ``NUMBA_CACHE_DIR`` pointing at a new empty directory, as on the first run
  after installing: the kernels compiled when installing
  (``sklearn_fil/_compiled.py``) run, every other kernel it calls compiles;
* *warm*: the same command again with that directory, now full;
* *cold, JIT only*: *cold* with the extension of compiled kernels hidden, so
  that every kernel compiles (as before it existed, or where a build had no
  C compiler);
* *no JIT*: the same command with ``NUMBA_DISABLE_JIT=1`` (the kernels run as
  Python): the floor for a run that compiled nothing and had nothing to load;
* *import*: ``import sklearn_fil`` against ``import sklearn.linear_model,
  pandas`` (both timed inside the child, around the import statement only),
  alternating.

The package's bytecode is written first, as ``pip install`` writes it: where
``PYTHONDONTWRITEBYTECODE`` is set (as on the machines these figures come
from) every child would otherwise compile the package's source again, about
0.1 s that an installed copy does not pay.

Each is the best of ``--repeat`` runs (cold: a new empty directory each run),
the imports of ``3 x --repeat`` alternating pairs.
The cold runs also record numba's compile events (``numba.core.event``): the
kernels compiled, with the seconds each took including the functions it
called that compiled with it. Targets: cold <= 2 x warm, import <= 1.3 x the
baseline.

Usage::

    python benchmarks/bench_startup.py [--repeat 3] [--out PATH]
"""

import argparse
import compileall
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numba
import numpy as np
from _machine import cpu_name, git_version
from _notes import with_kept_notes

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
COLD_TARGET = 2.0
IMPORT_TARGET = 1.3
# import pairs per repeat: a 1.3-2 s import varies by a third between runs on a
# virtual machine, so its best of 3 decided a 1.3 x target by chance
IMPORT_PAIRS = 3

# The child of a report run: main() as the ``sklearn-fil`` entry point calls
# it, numba's compile events (time and nesting) written to argv[2] as JSON.
_REPORT_CHILD = """
import json, sys, time
from numba.core import event
if sys.argv[3] == "jit":  # hide the kernels compiled when installing
    sys.modules["sklearn_fil._aot"] = None
events, stack = [], []
class Events(event.Listener):
    def on_start(self, ev):
        d = ev.data["dispatcher"]
        name = f"{d.py_func.__module__}.{d.py_func.__qualname__}"
        stack.append((time.perf_counter(), name))
    def on_end(self, ev):
        t0, name = stack.pop()
        events.append((name, len(stack), time.perf_counter() - t0))
event.register("numba:compile", Events())
from sklearn_fil.cli import main
status = main(["report", "--out", sys.argv[1]])
from sklearn_fil._compiled import _extension
with open(sys.argv[2], "w") as f:
    json.dump({"events": events, "compiled": _extension() is not None}, f)
sys.exit(status)
"""

_IMPORT_CHILD = """
import time
t0, c0 = time.perf_counter(), time.process_time()
import {modules}
print(time.perf_counter() - t0, time.process_time() - c0)
"""


def _env(**extra):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("NUMBA_DISABLE_JIT", None)
    env.update(extra)
    return env


def _run(args, env):
    """Wall and CPU seconds of a child process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(args, env=env, capture_output=True, text=True, cwd=ROOT)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{proc.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def report_run(tmp, cache_dir, disable_jit=False, jit_only=False):
    """One ``sklearn-fil report`` in a fresh interpreter: wall, CPU and its
    compile events, and whether the compiled kernels were in use."""
    out = Path(tmp) / "report.csv"
    for path in (out, out.with_suffix(".json"), Path(tmp) / "events.json"):
        path.unlink(missing_ok=True)
    extra = {"NUMBA_CACHE_DIR": str(cache_dir)}
    if disable_jit:
        extra["NUMBA_DISABLE_JIT"] = "1"
    args = [
        sys.executable,
        "-c",
        _REPORT_CHILD,
        str(out),
        str(Path(tmp) / "events.json"),
        "jit" if jit_only else "",
    ]
    wall, cpu, _ = _run(args, _env(**extra))
    child = json.loads((Path(tmp) / "events.json").read_text())
    return wall, cpu, child["events"], child["compiled"]


def import_time(modules):
    """Wall and CPU seconds of ``import modules`` in a fresh interpreter."""
    code = _IMPORT_CHILD.format(modules=modules)
    wall, cpu = _run([sys.executable, "-c", code], _env())[2].split()
    return float(wall), float(cpu)


def compile_table(events):
    """Top-level compiles (those a Python call started), slowest first."""
    top = [(t, name) for name, depth, t in events if depth == 0]
    return sorted(top, reverse=True)


def _best(runs):
    """The least wall and the least CPU seconds of ``(wall, cpu)`` pairs."""
    return tuple(min(column) for column in zip(*runs, strict=True))


def _met(value, target):
    return "met" if value <= target else "NOT met"


def write_markdown(path, res, command, started, load0):
    load1 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    cold, warm, jit, nojit = res["cold"], res["warm"], res["jit"], res["nojit"]
    ratio = cold[0] / warm[0]
    imp = res["import"]
    imp_ratio = imp["sklearn_fil"][0] / imp["baseline"][0]
    imp_cpu_ratio = imp["sklearn_fil"][1] / imp["baseline"][1]
    events = res["jit_events"]
    user = [e for e in events if e[0].startswith("sklearn_fil.")]
    in_use = (
        "in use"
        if res["compiled"]
        else "**not in use** (not built, or built elsewhere)"
    )
    md = [
        "# Cold start: the first `sklearn-fil report` and the import\n",
        f"- Date: {started}",
        f"- Command: `{command}`",
        f"- sklearn-fil version: git {git_version(HERE)}",
        f"- CPU: {cpu_name()}, {os.cpu_count()} logical; numba {numba.__version__}"
        f" ({numba.config.NUMBA_NUM_THREADS} threads available)",
        f"- Python {platform.python_version()}, NumPy {np.__version__}",
        f"- Load average (1, 5, 15 min) at the start: {load0}; at the end: {load1}"
        " (the targets are for an idle machine: a busy one stretches the wall "
        "times, the CPU times much less)",
        f"- Each figure is the least of {res['repeat']} fresh interpreters "
        f"({IMPORT_PAIRS * res['repeat']} for the imports, alternating; wall "
        "and CPU apart); *wall*: from the start of the process to its exit (for "
        "the import, of the import statement); *CPU*: its user + system seconds "
        "(less sensitive to a busy machine); the package's bytecode written "
        "first, as when installing. *cold*: an empty "
        "`NUMBA_CACHE_DIR` (a new one each run); *warm*: the same directory, "
        "full; *cold, JIT only*: an empty cache and the extension of kernels "
        "compiled when installing hidden; *no JIT*: `NUMBA_DISABLE_JIT=1`.",
        f"- The kernels compiled when installing (`sklearn_fil._aot`): {in_use} "
        f"in the cold and warm runs, which compiled {len(res['events'])} functions.",
        "",
        "| `sklearn-fil report` | wall | CPU |",
        "|---|---:|---:|",
        f"| cold | {cold[0]:.1f} s | {cold[1]:.1f} s |",
        f"| warm | {warm[0]:.1f} s | {warm[1]:.1f} s |",
        f"| cold, JIT only | {jit[0]:.1f} s | {jit[1]:.1f} s |",
        f"| no JIT | {nojit[0]:.1f} s | {nojit[1]:.1f} s |",
        f"| cold / warm | {ratio:.1f} × | {cold[1] / warm[1]:.1f} × |",
        "",
        f"Target cold <= {COLD_TARGET:g} × warm: **{_met(ratio, COLD_TARGET)}** "
        f"({ratio:.1f} ×).",
        "",
        "| import (inside the child) | wall | CPU |",
        "|---|---:|---:|",
        f"| `import sklearn_fil` | {imp['sklearn_fil'][0]:.2f} s | "
        f"{imp['sklearn_fil'][1]:.2f} s |",
        f"| `import sklearn.linear_model, pandas` | {imp['baseline'][0]:.2f} s | "
        f"{imp['baseline'][1]:.2f} s |",
        f"| ratio | {imp_ratio:.2f} × | {imp_cpu_ratio:.2f} × |",
        "",
        f"Target import <= {IMPORT_TARGET:g} × the baseline: "
        f"**{_met(imp_ratio, IMPORT_TARGET)}** ({imp_ratio:.2f} ×).",
        "",
        f"The cold run, JIT only, compiled {len(user)} sklearn-fil functions and "
        f"{len(events) - len(user)} of numba's own (NumPy and builtin "
        "overloads). The kernels a Python call compiled, with the seconds "
        "including the functions they call that compiled with them (wall, in "
        "the fastest such run):",
        "",
        "| kernel | compile |",
        "|---|---:|",
    ]
    md += [f"| `{name}` | {t:.2f} s |" for t, name in compile_table(events)]
    md += [
        "",
        f"Total: {sum(t for t, _ in compile_table(events)):.1f} s.",
        "",
    ]
    path.write_text(with_kept_notes(path, "\n".join(md)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "startup.md")
    args = parser.parse_args(argv)
    command = "python benchmarks/bench_startup.py"
    if args.repeat != 3:
        command += f" --repeat {args.repeat}"
    started = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    load0 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    res = {"repeat": args.repeat}
    compileall.compile_dir(ROOT / "sklearn_fil", quiet=1)
    imports = {"sklearn_fil": [], "baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        colds, warms, jits, nojits = [], [], [], []
        for i in range(args.repeat):
            cache = Path(tmp) / f"numba_cache_{i}"
            wall, cpu, events, compiled = report_run(tmp, cache)
            colds.append((wall, cpu, events, compiled))
            print(f"cold   {wall:6.1f} s wall  {cpu:6.1f} s CPU", flush=True)
            wall, cpu, *_ = report_run(tmp, cache)
            warms.append((wall, cpu))
            print(f"warm   {wall:6.1f} s wall  {cpu:6.1f} s CPU", flush=True)
            cache = Path(tmp) / f"numba_cache_jit_{i}"
            wall, cpu, events, _ = report_run(tmp, cache, jit_only=True)
            jits.append((wall, cpu, events))
            print(f"JIT    {wall:6.1f} s wall  {cpu:6.1f} s CPU", flush=True)
            wall, cpu, *_ = report_run(tmp, cache, disable_jit=True)
            nojits.append((wall, cpu))
            print(f"no JIT {wall:6.1f} s wall  {cpu:6.1f} s CPU", flush=True)
            for _ in range(IMPORT_PAIRS):
                imports["sklearn_fil"].append(import_time("sklearn_fil"))
                imports["baseline"].append(import_time("sklearn.linear_model, pandas"))
                print(
                    "import sklearn_fil {:.2f} s ({:.2f} s CPU), sklearn.linear_model"
                    " + pandas {:.2f} s ({:.2f} s CPU)".format(
                        *imports["sklearn_fil"][-1], *imports["baseline"][-1]
                    ),
                    flush=True,
                )
    # the best wall and the best CPU time of each, the events of the fastest cold
    res["cold"] = _best([r[:2] for r in colds])
    res["events"] = min(colds, key=lambda r: r[0])[2]
    res["compiled"] = all(r[3] for r in colds)
    res["warm"] = _best(warms)
    res["jit"] = _best([r[:2] for r in jits])
    res["jit_events"] = min(jits, key=lambda r: r[0])[2]
    res["nojit"] = _best(nojits)
    res["import"] = {k: _best(v) for k, v in imports.items()}
    for t, name in compile_table(res["jit_events"]):
        print(f"  compile {t:6.2f} s  {name}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    write_markdown(args.out, res, command, started, load0)
    print(f"cold / warm {res['cold'][0] / res['warm'][0]:.2f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
