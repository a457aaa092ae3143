"""Raw tables as the inputs of a private model: typing, cleaning, encoding.

:class:`TablePreparer` is the preparation ``sklearn-fil report`` applies to a
CSV file, as a scikit-learn transformer to put first in a
:class:`~sklearn.pipeline.Pipeline`: the command and Python users get the same
cleaning. :func:`read_raw_csv` reads the file as the command does.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from sklearn_fil.tabular._preparer import TablePreparer
from sklearn_fil.tabular._read import read_raw_csv

__all__ = ["TablePreparer", "read_raw_csv"]
