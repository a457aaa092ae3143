"""``python -m sklearn_fil.cli``: the ``sklearn-fil`` command."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import sys

from sklearn_fil.cli import main

sys.exit(main())
