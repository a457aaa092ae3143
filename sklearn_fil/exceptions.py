"""Warnings and errors of sklearn-fil."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

__all__ = [
    "BudgetExceededError",
    "CalibrationRangeWarning",
    "ClippingWarning",
    "NotAMinimiserWarning",
    "PrivacyLeakWarning",
    "UtilityWarning",
]


class PrivacyLeakWarning(RuntimeWarning):
    """A privacy guarantee was asked for but does not hold.

    Raised when the user asks for a differential-privacy number (``epsilon_``,
    ``delta_``) that the fitted estimator cannot back: for example
    :class:`~sklearn_fil.OutputPerturbedLogisticRegression` fitted without
    ``data_norm`` (the rows were not clipped, so the sensitivity is
    unbounded), or with an unpenalised intercept (the objective is then not
    strongly convex in it). The attribute then returns ``None``: no number is
    reported as a guarantee unless it is one.
    """


class BudgetExceededError(ValueError):
    """A release would take a privacy budget above its ε.

    Raised by :meth:`~sklearn_fil.accounting.PrivacyBudget.spend` before it
    records a release whose composition with the releases so far would exceed
    the budget (nothing is recorded then), or one without a differential
    privacy guarantee (an infinite ε); and by the grid-search ``refit`` of
    :func:`~sklearn_fil.accounting.within_budget` when no candidate fits.
    """


class CalibrationRangeWarning(UserWarning):
    """A number was computed outside the range where its formula holds.

    Issued by :class:`~sklearn_fil.audit.IntrinsicPrivacyAudit` when an
    intrinsic epsilon exceeds 1: the classical calibration of the Gaussian
    mechanism, ``epsilon = sqrt(2 log(1.25 / delta)) * sensitivity / std``,
    holds only for epsilon < 1, so larger values are ratios of sensitivity to
    variability on a familiar scale, not (epsilon, delta) pairs. The rows
    concerned also carry a ``caveat`` in ``audit_report_``.
    """


class ClippingWarning(UserWarning):
    """Clipping changed much of the training data.

    Issued by :class:`~sklearn_fil.OutputPerturbedLogisticRegression` when
    ``data_norm`` rescales more than half of the rows: the DP guarantee
    still holds, but it is about a model fitted on shrunken data, which may
    be no better than a constant. ``n_clipped_`` gives the count.
    """


class NotAMinimiserWarning(UserWarning):
    """The weights given to the FIL engine are not a minimiser of the objective.

    Issued by :func:`~sklearn_fil.fisher.fisher_information_loss` when the
    gradient of the regularised objective at ``coef`` is large relative to
    the size of its terms: the Fisher information loss is derived from the
    implicit-function Jacobian of the minimiser, so at other weights its
    numbers mean nothing. Fit to a tighter tolerance.
    """


class UtilityWarning(UserWarning):
    """A released model is no better than a constant on its training rows.

    Issued at the end of ``fit`` by the released estimators
    (:class:`~sklearn_fil.OutputPerturbedLogisticRegression`,
    :class:`~sklearn_fil.OutputPerturbedLinearRegression`, the IRFIL models
    and :class:`~sklearn_fil.neural.DPSGDClassifier`) when the released, noised
    model's training accuracy does not exceed the majority rate by more than
    two binomial standard errors, or its training R^2 does not exceed what
    ``d`` uninformative inputs reach by chance, ``(d + 2 sqrt(2 d)) / n``: the
    same verdict as the ``sklearn-fil`` command's summary. Its FIL and ε then
    describe a model that learned nothing useful; raise the target ε or
    lower the noise, add data, or change the L2 strength.

    The check reads the private training data, so the warning itself is
    about them: it is not part of :func:`~sklearn_fil.release`. Silence it with
    ``warnings.simplefilter("ignore", UtilityWarning)`` where many noisy
    models are fitted on purpose.
    """
