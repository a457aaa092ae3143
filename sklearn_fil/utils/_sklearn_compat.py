"""Every private scikit-learn import of the package lives here."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn.base import _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import _check_sample_weight

__all__ = ["Interval", "StrOptions", "_check_sample_weight", "_fit_context"]
