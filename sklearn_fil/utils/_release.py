"""The publishable copy of a fitted private estimator."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy

from sklearn.utils.validation import check_is_fitted

# The constructor parameters a fit used, kept so that ``release()`` advertises
# them even after ``set_params``; cleared with the fitted state.
FITTED_PARAMS = "_fitted_params"


def record_fitted_params(estimator):
    """Keep a copy of the constructor parameters the current fit uses."""
    setattr(estimator, FITTED_PARAMS, copy.deepcopy(estimator.get_params(deep=False)))


def fitted_params(estimator):
    """The constructor parameters of ``estimator``'s fit.

    Those recorded by :func:`record_fitted_params` (unchanged by a later
    ``set_params``); ``get_params(deep=False)`` for an estimator that records
    none, which is every estimator outside sklearn-fil.
    """
    recorded = getattr(estimator, FITTED_PARAMS, None)
    return dict(estimator.get_params(deep=False) if recorded is None else recorded)


def released_copy(estimator, public, metadata=()):
    """A new estimator with the fitted parameters and only public state.

    Parameters
    ----------
    estimator : fitted estimator
        Fitted with :func:`record_fitted_params` called during ``fit``.
    public : sequence of str
        Fitted attributes that may be published (copied when present).
    metadata : sequence of str, default=()
        Private attributes that describe the training recipe, not the data.

    Returns
    -------
    released : estimator
        Built from the parameters of the fit (with ``random_state=None``,
        which would reveal the noise), carrying ``guarantee_`` and the
        public attributes.
    """
    check_is_fitted(estimator)
    params = dict(getattr(estimator, FITTED_PARAMS))
    params["random_state"] = None
    released = type(estimator)(**params)
    for name in (*public, *metadata):
        if name in vars(estimator):
            setattr(released, name, copy.deepcopy(getattr(estimator, name)))
    released.guarantee_ = estimator.guarantee_
    setattr(released, FITTED_PARAMS, params)
    return released
