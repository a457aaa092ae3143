"""A Pipeline audited as a frozen public prefix followed by the audited model.

The audits refit their estimator many times, on neighbouring data sets. Given
a :class:`~sklearn.pipeline.Pipeline`, they refit only its final step: the
prefix (the transformers) is *frozen*, fitted once beforehand and treated as
public, and every data set goes through the same fitted prefix. This is the
only reading under which a differential-privacy claim of the final step can
hold for the pipeline: a prefix fitted on the private data (a scaler's means
and scales, an encoder's categories) is itself a release of that data, which
the final step's guarantee does not cover, and refitting it on each data set
would audit a mechanism that nobody claimed anything about.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn.exceptions import NotFittedError
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from sklearn_fil.utils._pipeline import split_pipeline, transform_dense


def is_sklearn_fil_estimator(estimator):
    """Whether the class of ``estimator``, or a base of it, is of this package."""
    return any(
        cls.__module__.split(".")[0] == "sklearn_fil" for cls in type(estimator).__mro__
    )


def audited_parts(estimator, caller, check_final):
    """``(prefix, final)``: the frozen prefix (None without a Pipeline) and model.

    Every check runs here, before the audit does any work: ``check_final``
    (called with the final step of a Pipeline) raises for a model the audit
    cannot audit, and each step of the prefix must be fitted.

    Parameters
    ----------
    estimator : estimator or Pipeline
        The audit's ``estimator`` parameter.
    caller : str
        Name of the audit, for the messages.
    check_final : callable
        ``check_final(final)`` raises a :class:`TypeError` naming what the
        audit needs when the final step of a Pipeline is not such a model.

    Returns
    -------
    prefix : Pipeline or None
        The fitted transformers (shared, not copied); None when
        ``estimator`` is no Pipeline or has a single step.
    final : estimator
        The model the audit refits.

    Raises
    ------
    TypeError
        From ``check_final``.
    sklearn.exceptions.NotFittedError
        When a step of the prefix is not fitted: the audit does not fit it
        (it would be fitted on the private data, see the module docstring).
    """
    if not isinstance(estimator, Pipeline):
        return None, estimator
    prefix, final = split_pipeline(estimator)
    check_final(final)
    if not prefix.steps:
        return None, final
    for name, step in prefix.steps:
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
    return prefix, final


def through_prefix(prefix, X):
    """``X`` through the frozen prefix (a float64 ndarray); ``X`` without one."""
    if prefix is None or X is None:
        return X
    return transform_dense(prefix, X)
