"""Raw tables as the inputs of a private model: typing, cleaning, encoding.

The command ``sklearn-fil report`` and Python users get the same cleaning.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.tabular._preparer import TablePreparer
from sklearn_fil.tabular._read import read_raw_csv

__all__ = ["TablePreparer", "read_raw_csv"]
