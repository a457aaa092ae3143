"""The command's outputs: the checks before any work, the sidecar JSON, the plot."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from pathlib import Path

import numpy as np
import pandas as pd

from sklearn_fil.cli._inputs import PROG, _InputError
from sklearn_fil.report_io import privacy_report_metadata, sidecar_path, to_jsonable


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` name the same file (links followed)."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return a.samefile(b)
    except OSError:
        pass
    return a.resolve() == b.resolve()


def _check_outputs(args):
    """The report's path, after checking before any work that outputs can be written.

    Each output (the report, its sidecar JSON, the plot) must be a regular
    file in an existing directory, not the input, and new unless ``--overwrite``.
    """
    out = Path(args.out)
    if out.suffix.lower() == ".json":
        raise _InputError(
            f"--out {out} ends in .json, the name of the report's sidecar JSON "
            "file; give the report a .csv name"
        )
    written = {"--out": out, "its sidecar JSON": sidecar_path(out)}
    if args.plot is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise _InputError(
                "--plot needs matplotlib: pip install sklearn-fil[plot]"
            ) from None
        if any(_same_file(args.plot, path) for path in written.values()):
            raise _InputError(f"--plot {args.plot} would overwrite the report")
        written["--plot"] = Path(args.plot)
    for what, path in written.items():
        option = "--plot" if what == "--plot" else "--out"
        if args.csv is not None and _same_file(path, args.csv):
            raise _InputError(
                f"refusing to overwrite the input {args.csv} with {what} ({path}); "
                f"choose another {option}"
            )
        if not path.parent.is_dir():
            raise _InputError(
                f"cannot write {path}: the directory {path.parent} does not exist"
            )
        if path.exists() and not path.is_file():
            kind = "a directory" if path.is_dir() else "a device, pipe or socket"
            raise _InputError(
                f"cannot write {path} ({what}): it is {kind}, not a regular file; "
                f"give {option} the path of a file"
            )
        if path.exists() and not args.overwrite:
            raise _InputError(
                f"refusing to overwrite the existing {path} ({what}); choose "
                f"another {option}, or pass --overwrite to replace it"
            )
    return out


def _write(write, content, path):
    """``write(content, path)``, an unwritable path an input error."""
    try:
        write(content, path)
    except OSError as exc:
        raise _InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _sidecar(estimator, data, model, args):
    """The run's context: settings, data, guarantee, for the JSON beside the report.

    The estimator's part is :func:`~sklearn_fil.report_io.privacy_report_metadata`
    (what ``privacy_report_.attrs`` holds); the command adds the data and its
    arguments.
    """
    meta, table = privacy_report_metadata(estimator), data["table"]
    features = [
        {
            "name": name,
            "kind": row.kind,
            "inputs": list(row.inputs),
            "n_levels": None if pd.isna(row.n_levels) else int(row.n_levels),
            "n_missing": int(row.n_missing),
        }
        for name, row in table["features"].iterrows()
    ]
    guarantee = ("sigma", "epsilon", "delta", "neighboring_relation", "public")
    labels_clipped = {}  # a linear model's labels clipped to --label-bound
    if not model.family.is_classifier:
        labels_clipped["n_labels_clipped"] = estimator.n_labels_clipped_
    sidecar = {
        "sklearn_fil_version": meta["sklearn_fil_version"],
        "command": f"{PROG} {args.command}",
        "data": data.get("source", data["name"]),
        "separator": data.get("sep"),
        "target": data["target"],
        "n": meta["n"],
        "model": model.name,
        "lam": estimator.lam_,  # the L2 strength used ("auto" resolved)
        **{key: meta[key] for key in guarantee},
        "dp_scope": data["dp_scope"] if meta["epsilon"] is not None else None,
        **{key: meta[key] for key in ("no_guarantee_reason", "n_clipped")},
        **labels_clipped,
        "dataset_fil": meta["dataset_fil"],
        "fit": data["fit"],
        "features": features,
        "dropped": [{"column": c, "why": w} for c, w in table["dropped"].items()],
        "notes": table["notes"],
        "possible_target_leaks": [
            {"column": c, "share": s} for c, s in table["leaks"].items()
        ],
        "settings": {
            "arguments": vars(args),
            "estimator": meta["estimator"],
            "estimator_params": meta["estimator_params"],
        },
        "sensitive": meta["sensitive"],
    }
    return to_jsonable(sidecar)


def _plot_histogram(estimator, y, model, class_names, path):
    """The FIL histogram (by class, named where the data set names them) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sklearn_fil.plotting import FILHistogramDisplay

    groups = None
    if model.family.is_classifier:
        names = class_names or {}
        groups = np.array([str(names.get(value, value)) for value in y])
    fig, ax = plt.subplots(figsize=(7, 4))
    display = FILHistogramDisplay.from_estimator(
        estimator, groups=groups, bins=40, log_scale=True, ax=ax
    )
    by = f", by {y.name}" if groups is not None else ""
    ax.set_title(
        f"Per-example FIL of the released {model.name} model ({y.size} examples){by}"
    )
    keys = list(display.bars_)
    if groups is None:
        labels = [f"all examples (n = {y.size})"]
    else:
        counts = pd.Series(groups).value_counts()
        labels = [f"{key} (n = {counts[key]})" for key in keys]
    ax.legend([display.bars_[key] for key in keys], labels, title=str(y.name))
    try:
        fig.savefig(path, dpi=100, bbox_inches="tight")
    except (OSError, ValueError) as exc:
        raise _InputError(f"cannot write the plot {path}: {exc}") from None
    finally:
        plt.close(fig)
