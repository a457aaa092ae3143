"""The message of scikit-learn's ``validate_params`` for a rejected parameter."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import re

FLOAT_POSITIVE = "a float in the range (0.0, inf)"
FLOAT_NONNEGATIVE = "a float in the range [0.0, inf)"
FLOAT_DELTA = "a float in the range (0.0, 1.0)"
FLOAT_SAMPLE_RATE = "a float in the range (0.0, 1.0]"
INT_POSITIVE = "an int in the range [1, inf)"


def invalid(name, constraint, got):
    """Regex of "The '<name>' parameter of <f> must be <constraint>. Got <got>"."""
    return (
        rf"The '{name}' parameter of [\w.]+ must be {re.escape(constraint)}\. "
        rf"Got {re.escape(got)} instead"
    )
