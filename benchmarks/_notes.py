"""Notes written by hand at the end of a results file, which a rerun keeps."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from pathlib import Path

HEADING = "## Notes (by hand"


def with_kept_notes(path, text):
    """``text``, then the hand-written notes of the file at ``path``: everything
    from its first heading that starts with ``HEADING`` (none if no file)."""
    try:
        old = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return text
    start = old.find(f"\n{HEADING}")
    if start < 0:
        return text
    return text.rstrip("\n") + "\n\n" + old[start + 1 :]
