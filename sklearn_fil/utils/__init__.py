"""Utilities of sklearn-fil."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause
