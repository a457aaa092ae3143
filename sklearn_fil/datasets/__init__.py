"""Loaders for the real data sets of the papers, read from installed packages."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.datasets._adult import load_adult
from sklearn_fil.datasets._iwpc import load_iwpc
from sklearn_fil.datasets._mnist import load_mnist

__all__ = ["load_adult", "load_iwpc", "load_mnist"]
