"""The random generator of the noise that makes a release private."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from sklearn.utils import check_random_state


def noise_rng(random_state):
    """Noise generator: fresh OS entropy for ``None``, else scikit-learn's rule.

    scikit-learn maps ``None`` to NumPy's global ``RandomState``, whose state
    anyone can seed or read in the same process; a release's noise must not be
    reproducible, so ``None`` gets a new ``Generator`` seeded from the OS.
    """
    if random_state is None:
        return np.random.default_rng()
    return check_random_state(random_state)
