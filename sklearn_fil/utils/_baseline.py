"""Does a released model beat the trivial baseline on its training rows?

One verdict, shared by the estimators' :class:`~sklearn_fil.exceptions.UtilityWarning`
and the command line's summary: a classifier is useful when its accuracy
exceeds the majority rate by more than two binomial standard errors; a
regressor when its R^2 exceeds what ``d`` uninformative inputs reach on the
training rows by chance (about ``d / n``, plus two standard deviations
``sqrt(2 d) / n``).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
import warnings
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np

from sklearn_fil.exceptions import UtilityWarning
from sklearn_fil.utils._text import plain


class FitQuality(NamedTuple):
    """A training score beside its baseline, and the verdict."""

    metric: str  # "accuracy" or "R^2"
    score: float
    baseline: float
    majority_class: object  # the most frequent label; None for a regressor
    margin: float
    useful: bool


def fit_quality(score, y, n_features, classifier):
    """:class:`FitQuality` of a model scoring ``score`` on the rows of ``y``.

    ``score`` is the accuracy (classifier) or R^2 (regressor) on those rows,
    ``n_features`` the number of inputs ``d``. The most frequent label wins
    ties by its first occurrence in sorted order.
    """
    n = len(y)
    if classifier:
        labels, counts = np.unique(np.asarray(y), return_counts=True)
        top = int(np.argmax(counts))
        baseline = float(counts[top] / n)
        margin = 2.0 * math.sqrt(baseline * (1.0 - baseline) / n)
        majority, metric = labels[top], "accuracy"
    else:
        baseline = 0.0
        margin = (n_features + 2.0 * math.sqrt(2.0 * n_features)) / n
        majority, metric = None, "R^2"
    return FitQuality(
        metric,
        float(score),
        baseline,
        majority,
        margin,
        float(score) > baseline + margin,
    )


def warn_if_useless(quality, estimator_name, remedy, stacklevel=2):
    """Issue a :class:`UtilityWarning` unless ``quality.useful``.

    ``remedy`` names what to try, e.g. ``"raise target_epsilon, use more data
    or change lam"``.
    """
    if quality.useful:
        return
    if quality.metric == "accuracy":
        beaten = (
            f"the majority rate {quality.baseline:.3f} (always "
            f"{plain(quality.majority_class)!r}) by two standard errors "
            f"({quality.margin:.3f})"
        )
    else:
        beaten = f"{quality.margin:.3g}, what uninformative inputs reach by chance"
    warnings.warn(
        f"The released {estimator_name} is no better than a constant on its "
        f"training rows: training {quality.metric} {quality.score:.3f} does not "
        f"exceed {beaten}. The noise swamps "
        f"what it learned; {remedy}. (Computed from the private training data: "
        "not part of release().)",
        UtilityWarning,
        stacklevel=stacklevel + 1,
    )


@contextmanager
def utility_warnings_ignored():
    """Silence :class:`UtilityWarning` inside the block.

    For fits whose utility is no concern of the user: the neighbouring data
    sets of an audit, a search's candidates, a fit whose caller reports the
    verdict itself.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UtilityWarning)
        yield
