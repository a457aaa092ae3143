"""Privacy attacks that check the FIL report against what an adversary recovers."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
