"""Hyperparameter search with a differentially private selection.

:class:`~sklearn_fil.model_selection.PrivateSearchCV` tunes a private
estimator on private data and charges the tuning itself: its ``guarantee_``
covers the candidates, the selection (random stopping, Papernot and Steinke
2022) and the refit.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.model_selection._search import PrivateSearchCV

__all__ = ["PrivateSearchCV"]
