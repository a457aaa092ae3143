"""What the audits share: the audited model, its checks, a progress bar.

Given a :class:`~sklearn.pipeline.Pipeline`, the audits refit only its final
step: the prefix is *frozen*, fitted once beforehand and treated as public.
Only then can a privacy claim of the final step hold for the pipeline: a
prefix fitted on the private data is itself a release of that data, which the
final step's guarantee does not cover.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import sys

import numpy as np
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import (
    check_array,
    check_consistent_length,
    check_is_fitted,
)

from sklearn_fil.utils._pipeline import split_pipeline, transform_dense
from sklearn_fil.utils._weights import weight_names


def check_guaranteed_final(final, caller):
    """Raise unless a Pipeline's final step is a sklearn-fil estimator that
    ``caller``, an audit of a reported guarantee, can fit."""
    ours = any(c.__module__.split(".")[0] == "sklearn_fil" for c in type(final).__mro__)
    if not ours or not hasattr(final, "fit"):
        raise TypeError(
            f"{caller} audits a Pipeline whose final step is a sklearn-fil "
            "estimator that reports a guarantee (e.g. "
            "OutputPerturbedLogisticRegression with data_norm, DPSGDClassifier); "
            f"the final step is {type(final).__name__}."
        )


def audited_parts(estimator, caller, check_final, seed_use):
    """``(prefix, final)``: the frozen prefix (None without a Pipeline) and model.

    Every check runs here, before the audit does any work: ``check_final``
    raises a TypeError for the final step of a Pipeline the audit cannot
    audit; each step of the prefix must be fitted (the audit would fit it on
    the private data); the model needs a ``random_state``, which the audit
    uses as ``seed_use`` says. ``caller`` names the audit in the messages.
    """
    prefix, final = None, estimator
    if isinstance(estimator, Pipeline):
        prefix, final = split_pipeline(estimator)
        check_final(final)
        prefix = prefix if prefix.steps else None
    for name, step in [] if prefix is None else prefix.steps:
        if step is None or (isinstance(step, str) and step == "passthrough"):
            continue
        try:
            check_is_fitted(step)
        except NotFittedError as exc:
            raise NotFittedError(
                f"{caller} audits a Pipeline with its prefix frozen: the prefix is "
                "fitted once and treated as public, and only the final step is "
                f"refitted. Step {name!r} ({type(step).__name__}) is not fitted; "
                "fit the prefix first (on public data for the audited guarantee "
                "to cover the pipeline; fitted on the private data it is a "
                "release of its own that the guarantee does not cover)."
            ) from exc
    if "random_state" not in final.get_params(deep=False):
        raise TypeError(
            f"{type(final).__name__} has no random_state parameter: {seed_use}."
        )
    return prefix, final


def through_prefix(prefix, X):
    """``X`` through the frozen prefix (a float64 ndarray); ``X`` without one."""
    if prefix is None or X is None:
        return X
    return transform_dense(prefix, X)


def checked_weight_names(model, compared):
    """The released weights' names of a fitted ``model``, else a TypeError."""
    names = weight_names(model)
    if names is None:
        raise TypeError(
            f"{type(model).__name__} exposes neither coef_ and intercept_ nor "
            f"coefs_ and intercepts_ after fit: the audit compares {compared}."
        )
    return names


def check_extra_rows(X, y, n_features, name):
    """``(X_<name>, y_<name>)`` checked against ``n_features``; None if absent."""
    if X is None and y is None:
        return None
    if X is None or y is None:
        raise ValueError(f"X_{name} and y_{name} must be given together.")
    X = check_array(X, dtype=np.float64)
    y = np.asarray(y)
    check_consistent_length(X, y)
    if X.shape[1] != n_features:
        raise ValueError(f"X_{name} has {X.shape[1]} features; X has {n_features}.")
    return X, y


def progress(results, total, verbose, caller, unit, size=lambda result: 1):
    """Yield ``results``, drawing a bar of the ``unit`` done on stderr if verbose.

    ``size(result)`` counts the units of one result; the bar is redrawn when
    its percentage changes, at most 101 times.
    """
    done, shown = 0, -1
    for result in results:
        done += size(result)
        percent = 100 * done // total
        if verbose and percent != shown:
            shown = percent
            filled = 30 * done // total
            end = "\n" if done == total else ""
            sys.stderr.write(
                f"\r{caller} [{'#' * filled}{'.' * (30 - filled)}] "
                f"{done}/{total} {unit}{end}"
            )
            sys.stderr.flush()
        yield result
