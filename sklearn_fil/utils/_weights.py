"""The released weights of a fitted model, as one vector."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

# Pairs of fitted attributes that hold a model's weights and biases: lists of
# arrays for a network, one array and a scalar (or an array) for a GLM.
WEIGHT_ATTRIBUTES = (("coefs_", "intercepts_"), ("coef_", "intercept_"))


def weight_names(model):
    """The pair of fitted attributes holding the weights, or None."""
    for names in WEIGHT_ATTRIBUTES:
        if all(hasattr(model, name) for name in names):
            return names
    return None


def flatten_weights(model, names=None):
    """One float64 vector of all weights then all biases.

    ``names`` is the pair :func:`weight_names` finds (looked up when None).
    """
    names = weight_names(model) if names is None else names
    weights, biases = (getattr(model, name) for name in names)
    parts = [*weights, *biases] if isinstance(weights, list) else [weights, biases]
    return np.concatenate([np.ravel(np.asarray(a, dtype=np.float64)) for a in parts])
