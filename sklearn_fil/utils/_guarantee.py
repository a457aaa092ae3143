"""The fitted DP guarantee of an estimator, reported only where it holds."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

from sklearn.utils.validation import check_is_fitted

from sklearn_fil.exceptions import PrivacyLeakWarning


class GuaranteeMixin:
    """``epsilon_`` and ``delta_`` from a fitted ``_guarantee_state``.

    ``fit`` stores ``_guarantee_state``, a dict with the guarantee's numbers
    and a ``reason``: None when the guarantee holds, otherwise why it does
    not, which every read of a guarantee attribute then warns with (a
    :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`) while returning None.
    """

    def _guaranteed(self, key):
        check_is_fitted(self)
        state = self._guarantee_state
        if state["reason"] is not None:
            warnings.warn(state["reason"], PrivacyLeakWarning, stacklevel=3)
            return None
        return state[key]

    @property
    def epsilon_(self):
        """ε of the (ε, δ)-DP guarantee, or None (with a warning)."""
        return self._guaranteed("epsilon")

    @property
    def delta_(self):
        """δ of the (ε, δ)-DP guarantee, or None (with a warning)."""
        return self._guaranteed("delta")
