"""Short readable listings of values and names, for messages and summaries."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np


def plain(value):
    """A NumPy scalar as the Python value it holds (for readable reprs)."""
    return value.item() if isinstance(value, np.generic) else value


def joined(texts, limit):
    """``texts`` joined by commas, past ``limit`` cut with a count of the rest."""
    more = f", ... ({len(texts) - limit} more)" if len(texts) > limit else ""
    return ", ".join(texts[:limit]) + more


def preview(names, limit=8):
    """Comma-separated reprs of ``names``, truncated after ``limit``."""
    return joined([repr(str(name)) for name in names], limit)
