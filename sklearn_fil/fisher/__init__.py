"""The FIL engine: Fisher information loss of output-perturbed GLMs.

It knows nothing about estimators: it takes a loss family, the data, the
fitted weights, the regularisation, the sample weights, the noise scale and
which coordinates are private, and returns arrays.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.fisher._api import fisher_information_loss
from sklearn_fil.fisher._engine import FisherInformationLoss

__all__ = ["FisherInformationLoss", "fisher_information_loss"]
