"""Fits that either succeed or leave no fitted state at all, and fits that
skip the report work nobody reads."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause


def clear_fitted_state(estimator, private=()):
    """Delete the fitted attributes (``name_``) and the private ones listed."""
    for attr in [a for a in vars(estimator) if a.endswith("_") or a in private]:
        delattr(estimator, attr)


def fit_or_clear(estimator, fit, *args, private=()):
    """Return ``fit(*args)``; if it raises, ``estimator`` keeps no fitted state.

    Not even a previous successful fit's: a half-replaced fit would mix the
    state of two data sets. ``private`` names fitted attributes that do not
    end in ``_``.
    """
    clear_fitted_state(estimator, private)
    try:
        return fit(*args)
    except BaseException:
        clear_fitted_state(estimator, private)
        raise


# Parameters whose only effect is on report columns, at the values that skip
# them. Meta-estimators that read the weights alone (the audits' releases, the
# private search's candidates) set them; the fitted weights are the same to the
# bit (tests/test_unread_report.py).
UNREAD_REPORT = {"per_instance_accounting": False, "fil_accounting": False}


def unread_report_params(estimator, prefix=""):
    """The ``UNREAD_REPORT`` settings that ``estimator`` takes, as ``prefix + name``."""
    own = estimator.get_params(deep=False)
    return {prefix + p: v for p, v in UNREAD_REPORT.items() if p in own}
