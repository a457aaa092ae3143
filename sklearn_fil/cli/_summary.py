"""The printed summary: the data, the model and its fit, the FIL, the guarantee.

Text tables from the fitted estimator's report and typed fields
(:class:`~sklearn_fil.accounting.Guarantee`), Greek letters where the
terminal can print them.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import textwrap

import pandas as pd
from pandas.api.types import is_float_dtype, is_numeric_dtype

from sklearn_fil.cli._inputs import PROG, _joined, _plain
from sklearn_fil.report_io import sidecar_path
from sklearn_fil.utils._baseline import fit_quality

_N_TOP_ATTRIBUTES = 10
_N_LISTED = 30  # feature names printed per kind; the sidecar JSON has them all
_KEEP_TOGETHER = "\x00"  # a space that _wrapped does not break lines at
_QUANTILES = {
    "min": 0.0,
    "25%": 0.25,
    "median": 0.5,
    "75%": 0.75,
    "95%": 0.95,
    "max": 1.0,
}
_CLIPPED = {"--data-norm": "rows", "--label-bound": "labels"}
_RELATIONS = {
    "replace_one": "replace-one neighbours (data sets of the same, public size "
    "that differ in one example)",
    "add_remove": "add/remove-one neighbours (data sets that differ by adding or "
    "removing one example)",
}


def _symbols(stream):
    """Greek letters where ``stream`` can print them, ASCII names otherwise."""
    greek = {"eps": "ε", "delta": "δ", "sigma": "\N{GREEK SMALL LETTER SIGMA}"}
    greek.update(lam="λ", eta="η", etabar="η̄", le="≤", sq="²")
    try:
        "".join(greek.values()).encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        ascii_names = ("epsilon", "delta", "sigma", "lambda", "eta", "eta-bar")
        return dict(zip(greek, (*ascii_names, "<=", "^2"), strict=True))
    return greek


def _num(value):
    return f"{value:.4g}"


def _wrapped(text, indent="        ", first=None):
    """``text`` wrapped to 88 columns, continuation lines indented."""
    lines = textwrap.wrap(
        text,
        88,
        initial_indent=indent if first is None else first,
        subsequent_indent=indent,
        break_on_hyphens=False,
        break_long_words=False,  # paths stay whole
    )
    return [line.replace(_KEEP_TOGETHER, " ") for line in lines]


def _text_table(frame):
    """Lines of ``frame`` aligned: text to the left, numbers to the right.

    Floats print with 4 significant digits, everything else as ``str``.
    """
    columns = []
    for name, values in frame.items():
        right = is_numeric_dtype(values)
        text = [_num(v) if is_float_dtype(values) else str(v) for v in values]
        width = max(len(cell) for cell in [str(name), *text])
        columns.append(
            [c.rjust(width) if right else c.ljust(width) for c in [name, *text]]
        )
    return [("  " + "  ".join(row)).rstrip() for row in zip(*columns, strict=True)]


def _summary(estimator, data, model, args, data_norm, sym):
    """Lines of the printed summary, from the data set to the DP guarantee."""
    report = estimator.privacy_report_
    lines = [f"{PROG} report: Fisher information loss (FIL) of a released model", ""]
    lines += _data_lines(estimator, data, args, sym)
    lines += _model_lines(estimator, data, model, args, data_norm, sym)
    bounds = (data_norm, _label_bound(estimator))
    lines += _quality_lines(data["fit"], data, bounds, sym, args.target_epsilon)
    lines += _report_lines(report, min(args.top, report.shape[0]), sym)
    lines += _attribute_lines(estimator)
    lines += [
        "",
        f"Dataset FIL (all examples together): {_num(estimator.dataset_fil_)}",
    ]
    lines += _guarantee_lines(estimator.guarantee_, data, args, data_norm, sym)
    return lines


def _data_lines(estimator, data, args, sym):
    """Lines on the data: its size, notes and dropped columns, then its features."""
    n, d = estimator.privacy_report_.shape[0], estimator.n_features_in_
    table, n_features = data["table"], len(data["table"]["features"])
    width = f"{n_features} features"
    width += f" ({d} model inputs)" if n_features != d else ""
    label = "private" if args.private_label else "public"
    lines = [f"Data:   {data['name']}"]
    lines += [f"        {n} examples, {width}, target {data['target']!r} ({label})"]
    for note in table["notes"]:
        lines += _wrapped(f"Note: {note}", first="        ")
    dropped = pd.DataFrame(table["dropped"].items(), columns=["column", "why"])
    if len(dropped):
        head = f"Dropped {len(dropped)} column(s) (--keep COL keeps a detected one):"
        lines += ["", head, *_text_table(dropped.astype(str))]
    if dropped["why"].str.startswith("dates").any():
        lines += ["  (to use a date, turn it into a number, e.g. days since an event)"]
    return lines + _feature_lines(table, sym)


def _feature_lines(table, sym):
    """Lines naming the numeric and categorical features, and the values imputed."""
    features, prepared = table["features"], table.get("preprocessed", False)
    numeric = features.index[features["kind"] == "numeric"]
    categorical = [
        f"{name} ({row.n_levels})"
        if len(row.inputs) >= row.n_levels
        else f"{name} ({row.n_levels}: top {len(row.inputs) - 1} + other)"
        for name, row in features[features["kind"] != "numeric"].iterrows()
    ]
    how = (", standardised", ", one-hot encoded") if prepared else ("", "")
    texts = [
        f"{len(numeric)} numeric{how[0]}: {_listing(numeric)}" * bool(len(numeric)),
        f"{len(categorical)} categorical{how[1]}, each one attribute (distinct "
        f"values): {_listing(categorical)}" * bool(categorical),
    ]
    missing = features["n_missing"][features["n_missing"] > 0]
    if prepared and len(missing):
        listed = ", ".join(f"{name} {count}" for name, count in missing.items())
        texts.append(
            "Missing values, imputed (median of a numeric column, most frequent "
            f"value of another) in {len(missing)} column(s): {listed}"
        )
    lines = ["", f"Features used ({len(features)} columns of the data):"]
    for text in filter(None, texts):
        lines += _wrapped(text, indent="    ", first="  ")
    if not prepared:
        return lines
    return lines + _wrapped(
        "The imputation, the standardisation and the one-hot levels are fitted on "
        f"every row, so they too depend on each example: the FIL and {sym['eps']} "
        "below cover the model fitted to the preprocessed rows, not the "
        "preprocessing.",
        indent="  ",
    )


def _listing(names, limit=_N_LISTED):
    """``names`` joined by commas (spaces inside kept together), past ``limit`` cut."""
    return _joined([str(name).replace(" ", _KEEP_TOGETHER) for name in names], limit)


def _model_lines(estimator, data, model, args, data_norm, sym):
    """Lines describing the fitted model: its noise, penalty and clipping."""
    lam, sigma = estimator.lam_, estimator.sigma_
    text = f"Model:  {model.title}, {sym['lam']} = {lam:.4g}, Gaussian output noise "
    text += f"{sym['sigma']} = {sigma:.4g}"
    lines = ["", text]
    n, label_bound = estimator.privacy_report_.shape[0], _label_bound(estimator)
    if data_norm is not None:
        n_clipped = estimator.n_clipped_
        lines[-1] += f", rows clipped to norm {sym['le']} {data_norm:g}"
        lines.append(
            f"        clipping rescaled {n_clipped} of {n} rows{_most(n_clipped, n)}"
        )
    if label_bound is not None:
        n_clipped = estimator.n_labels_clipped_
        lines.append(
            f"        labels clipped to [-{label_bound:g}, {label_bound:g}]: "
            f"clipping changed {n_clipped} of {n} labels{_most(n_clipped, n)}"
        )
    if args.target_epsilon is not None:
        how = f"{sym['sigma']} calibrated to {sym['eps']} = {args.target_epsilon:g}"
        if args.lam is None:
            how += (
                f"; {sym['lam']} chosen from n, d, the norm bound, {sym['eps']} and "
                f"{sym['delta']} alone (public numbers: lam='auto')"
            )
        lines += _wrapped(f"({how})")
    if data.get("model_note"):
        lines.append(f"        ({data['model_note']})")
    return lines


def _label_bound(estimator):
    """The bound the labels were clipped to, None for none (or a classifier)."""
    return getattr(estimator, "label_bound", None)


def _most(n_clipped, n):
    """A pointer to the estimator's warning when clipping changed most of ``n``."""
    return " (most of them: see the warning above)" if 2 * n_clipped > n else ""


def _fit_quality(estimator, X, y, model):
    """Training score of the released model beside the baseline, and the verdict.

    :func:`~sklearn_fil.utils._baseline.fit_quality`, the test of the
    estimators' :class:`~sklearn_fil.exceptions.UtilityWarning`, on the rows
    as given.
    """
    score = float(estimator.score(X, y))
    quality = fit_quality(score, y, X.shape[1], model.family.is_classifier)
    return {**quality._asdict(), "majority_class": _plain(quality.majority_class)}


def _quality_lines(fit, data, bounds, sym, target_epsilon=None):
    """Lines of the training score, the baseline, the verdict and any leak.

    ``bounds`` is ``(data_norm, label_bound)``, None where not clipped.
    """
    if fit["metric"] == "accuracy":
        metric = "accuracy"
        baseline = f"majority baseline (always {fit['majority_class']!r})"
    else:
        metric, baseline = "R" + sym["sq"], "baseline (always the mean)"
    lines = [
        "",
        f"Fit:    training {metric} of the released model {fit['score']:.3f}; "
        f"{baseline} {fit['baseline']:.3f}",
        *_wrapped("Verdict: " + _verdict(fit, bounds, sym, target_epsilon), first=""),
    ]
    leaks = data["table"]["leaks"]
    if leaks:
        shown = [f"{name!r} ({share:.1%} of rows)" for name, share in leaks.items()]
        lines += _wrapped(
            f"Possible target leak: {', '.join(shown)} alone predict "
            f"{data['target']!r} (majority baseline {fit['baseline']:.1%}). A column "
            "recorded after, or derived from, the outcome flatters the model: --drop "
            "it if so.",
            first="",
        )
    return lines


def _verdict(fit, bounds, sym, target_epsilon=None):
    """One sentence judging the released model against its baseline."""
    accuracy = fit["metric"] == "accuracy"
    if fit["useful"] and accuracy:
        gain = 100 * (fit["score"] - fit["baseline"])
        return f"the released model beats the majority baseline by {gain:.1f} points."
    if fit["useful"]:
        return (
            f"the released model explains {fit['score']:.1%} of the target's "
            "variance on its training rows."
        )
    if accuracy:
        within = "within 2 standard errors of the majority rate"
        useless = f"no better than always predicting {fit['majority_class']!r}"
    else:
        within = "no more than uninformative inputs reach by chance"
        useless = "no better than always predicting the mean"
    if target_epsilon is None:
        fixes = f"lower {sym['sigma']} or {sym['lam']}"
    else:
        fixes = "raise --target-epsilon, use more data or set --lam"
    raised = [
        option
        for option, bound in zip(("--data-norm", "--label-bound"), bounds, strict=True)
        if bound is not None
    ]
    fixes += f", or raise {' or '.join(raised)}" if raised else ""
    return (
        f"the released model is {useless} ({within}): its FIL and {sym['eps']} "
        f"describe a model that learned nothing useful; {fixes} before relying on "
        "them."
    )


def _report_lines(report, k, sym):
    """Lines of the quantiles of the per-example FIL and of the ``k`` most exposed."""
    quantiles = report[["fil", "dfil"]].quantile(list(_QUANTILES.values())).T
    quantiles.columns = list(_QUANTILES)
    lines = [
        "",
        f"Per-example FIL: fil = {sym['eta']} (most exposed direction), "
        f"dfil = {sym['etabar']} (RMS over coordinates)",
        *_text_table(quantiles.rename_axis("").reset_index()),
    ]
    if k <= 0:
        return lines
    top = report.nlargest(k, "fil")
    attributes = top[[c for c in report.columns if c.startswith("fil[")]]
    shown = top[["fil", "dfil", "mse_bound"]].rename_axis(report.index.name or "sample")
    shown["top attribute (its fil)"] = [
        f"{column[4:-1]} ({_num(value)})"
        for column, value in zip(
            attributes.idxmax(axis=1), attributes.max(axis=1), strict=True
        )
    ]
    return [
        *lines,
        "",
        f"Most exposed examples (top {k} of {report.shape[0]} by fil; mse_bound = "
        "1/dfil^2 is the least",
        "per-coordinate MSE of any unbiased reconstruction of the example)",
        *_text_table(shown.reset_index()),
    ]


def _attribute_lines(estimator):
    """Lines of the table of the attributes with the largest FIL.

    Ranked in standard deviations (``attribute_fil_sd_``), so that attributes
    in different units compare, beside the raw FIL.
    """
    table = pd.DataFrame(
        {"fil": estimator.attribute_fil_, "fil_sd": estimator.attribute_fil_sd_}
    ).sort_values("fil_sd", ascending=False, na_position="last")
    shown = table.head(_N_TOP_ATTRIBUTES).rename_axis("attribute").reset_index()
    text = (
        f"Attributes by FIL over all examples (top {len(shown)} of {len(table)}), "
        "ranked by fil_sd, the FIL in units of the attribute's standard deviation: "
        "1/fil_sd^2 bounds the MSE/variance of any unbiased reconstruction of the "
        "attribute, and guessing its mean scores 1"
    )
    shown["attribute"] = shown["attribute"].astype(str)
    return ["", *_wrapped(text, indent="  ", first=""), *_text_table(shown)]


def _guarantee_lines(guarantee, data, args, data_norm, sym):
    """Lines stating the (epsilon, delta) guarantee, or why there is none.

    Read from the typed fields of the estimator's
    :class:`~sklearn_fil.accounting.Guarantee`.
    """
    if not guarantee.holds:
        missing, fix = data.get("missing_for_guarantee"), ""
        if missing:
            what = " and ".join(_CLIPPED[option] for option in missing)
            if data_norm is None and "--data-norm" not in missing:
                # a data set's own row bound, applied once a guarantee is asked
                what += (
                    f", and the rows to the data's norm bound {data['data_norm']:g},"
                )
            fix = f"; pass {' and '.join(missing)} to clip the {what} and get one"
        first = f"{sym['eps']}: not defined (no DP guarantee{fix})"
        return [
            *_wrapped(first, indent="    ", first=""),
            *_wrapped(guarantee.reason, indent="  "),
        ]
    default = " (the default, below 1/n)" if args.delta is None else ""
    relation = _RELATIONS.get(
        guarantee.neighboring_relation, guarantee.neighboring_relation
    )
    return [
        f"{sym['eps']} = {_num(guarantee.epsilon)} at {sym['delta']} = "
        f"{guarantee.delta:.4g}{default}: the released weights are "
        f"({sym['eps']}, {sym['delta']})-DP",
        *_wrapped(f"for {data['dp_scope']}, under{_KEEP_TOGETHER}{relation}", "  "),
    ]


def _written_lines(report, out, plot):
    """Closing lines: the files written, and the warning that they are private."""
    n_attributes = sum(column.startswith("fil[") for column in report.columns)
    others = [column for column in report.columns[3:] if not column.startswith("fil[")]
    also = f" and {', '.join(others)}" if others else ""
    texts = [
        f"Wrote the privacy report ({report.shape[0]} rows; fil, dfil, mse_bound, "
        f"{n_attributes} fil[<attribute>] columns{also}) to {out}",
        "Wrote the settings, features, dropped columns and guarantee to "
        f"{sidecar_path(out)}",
        *(
            [f"Wrote the FIL histogram to {plot}".replace(" ", _KEEP_TOGETHER)]
            * bool(plot)
        ),
        f"Keep {out} private: it is computed from every example's data, so it is "
        "itself sensitive.",
    ]
    return ["", *(line for text in texts for line in _wrapped(text, "  ", ""))]
