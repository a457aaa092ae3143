"""``epsilon_`` and ``delta_`` read from the fitted, typed guarantee."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import warnings

from sklearn.utils.validation import check_is_fitted

from sklearn_fil.exceptions import PrivacyLeakWarning


class GuaranteeMixin:
    """``epsilon_``, ``delta_`` and ``dp_event_`` from the fitted ``guarantee_``.

    ``fit`` stores ``guarantee_``, a :class:`~sklearn_fil.accounting.Guarantee`.
    When it does not hold, every read of ``epsilon_`` or ``delta_`` warns with
    its reason (a :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`) and
    returns None.
    """

    def _guaranteed(self, key):
        check_is_fitted(self)
        guarantee = self.guarantee_
        if not guarantee.holds:
            warnings.warn(guarantee.reason, PrivacyLeakWarning, stacklevel=3)
            return None
        return getattr(guarantee, key)

    @property
    def epsilon_(self):
        """ε of the (ε, δ)-DP guarantee, or None (with a warning)."""
        return self._guaranteed("epsilon")

    @property
    def delta_(self):
        """δ of the (ε, δ)-DP guarantee, or None (with a warning)."""
        return self._guaranteed("delta")

    @property
    def dp_event_(self):
        """The guarantee's ``dp-accounting`` event, or None (with a warning).

        Compose it under the dp-accounting relation ``guarantee_.event_relation``
        (see :class:`~sklearn_fil.accounting.Guarantee`), or hand the
        estimator to a :class:`~sklearn_fil.accounting.PrivacyBudget`.
        """
        return self._guaranteed("dp_event")
