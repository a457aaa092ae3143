"""Membership labels, checked: shared by the membership attacks and their display."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np


def membership_array(membership):
    """``membership == 1``, checked to hold only 0/1 (or False/True) values.

    1 marks the rows in the model's training set.
    """
    membership = np.asarray(membership)
    if membership.ndim != 1:
        raise ValueError(
            f"membership must be a 1d array, got an array of shape {membership.shape}."
        )
    if membership.dtype != np.bool_:
        if membership.dtype.kind not in "iuf" or not np.isin(membership, [0, 1]).all():
            raise ValueError(
                "membership must hold only 0/1 (or False/True) values, 1 for rows "
                "in the model's training set."
            )
        membership = membership == 1
    return membership
