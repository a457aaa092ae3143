"""Parameter checks of the accounting functions.

The public functions declare their parameters' constraints to scikit-learn's
``validate_params``, with the intervals below. What it cannot express stays
here: a boolean is not a number of steps or a noise level (scikit-learn's
``Interval`` takes ``True`` for 1), and arrays whose every entry must lie in
a range.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral, Real

import numpy as np

from sklearn_fil.utils._sklearn_compat import (
    Hidden,
    Interval,
    StrOptions,
    validate_params,
)

__all__ = [
    "NONNEGATIVE",
    "OPEN_UNIT",
    "POSITIVE",
    "Hidden",
    "Number",
    "StrOptions",
    "check_entries",
    "count",
    "nonnegative_array",
    "real_array",
    "validate_params",
]


class Number(Interval):
    """An :class:`~sklearn.utils._param_validation.Interval` that refuses booleans.

    Open ends refuse infinities: ``Number(Real, 0, None, closed="neither")``
    is a finite positive real number.
    """

    def is_satisfied_by(self, val):
        return not isinstance(val, bool) and super().is_satisfied_by(val)


POSITIVE = Number(Real, 0, None, closed="neither")
NONNEGATIVE = Number(Real, 0, None, closed="left")
OPEN_UNIT = Number(Real, 0, 1, closed="neither")  # a δ


def count(low):
    """An integer ``>= low``."""
    return Number(Integral, low, None, closed="left")


def real_array(value, name, kind="an array of real numbers"):
    """``value`` as a float64 array; ``ValueError`` naming ``kind`` if it is not one."""
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be {kind}, got {name}={value!r}.") from exc


def check_entries(array, bad, message):
    """``array``; ``ValueError(message.format(first entry))`` where ``bad`` holds."""
    if np.any(bad):
        raise ValueError(message.format(float(array[bad].flat[0])))
    return array


def nonnegative_array(value, name, kind="a real number or an array of real numbers"):
    """``value`` as a float64 array whose entries are >= 0 (infinity allowed)."""
    array = real_array(value, name, kind)
    rule = f"{name} must be >= 0 (and not NaN), got {name}={{!r}}."
    return check_entries(array, np.isnan(array) | (array < 0), rule)
