"""Every private scikit-learn import of the package lives here."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn.base import _fit_context
from sklearn.utils._param_validation import (
    Hidden,
    Interval,
    StrOptions,
    validate_params,
)
from sklearn.utils.validation import _check_sample_weight

__all__ = [
    "Hidden",
    "Interval",
    "StrOptions",
    "_check_sample_weight",
    "_fit_context",
    "validate_params",
]
