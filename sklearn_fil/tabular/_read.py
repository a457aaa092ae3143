"""Reading a raw CSV file: UTF-8 text, its delimiter sniffed."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import csv

import pandas as pd

_SNIFF_CHARS = 65536  # csv.Sniffer reads the first lines, up to this many characters
_SEPARATORS = ",;\t|"
_CHUNK_BYTES = 1 << 20  # read at a time when scanning a file for NUL bytes


def read_raw_csv(path, *, sep=None):
    """Read a CSV file as it is, its delimiter sniffed when not given.

    The file must be UTF-8 text (a byte-order mark is allowed) with a header
    row. The delimiter is the one ``csv.Sniffer`` finds in the first
    lines among ``,``, ``;``, tab and ``|``, or ``,`` when none is
    consistent. No column is converted beyond what ``pandas.read_csv``
    infers: :class:`TablePreparer` does the typing.

    Parameters
    ----------
    path : str or path-like
        The CSV file.
    sep : str, default=None
        The delimiter; None sniffs it. A delimiter of more than one
        character is read by pandas' Python engine.

    Returns
    -------
    frame : pandas.DataFrame
        The table, one row per data line.
    sep : str
        The delimiter used.

    Raises
    ------
    ValueError
        When the file is not a CSV text file: it holds a NUL byte (UTF-16
        and binary files do), is not UTF-8, is empty or does not parse. The
        message names the file.
    OSError
        When the file cannot be opened (missing, a directory, no permission).

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from sklearn_fil.tabular import read_raw_csv
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     path = Path(tmp) / "data.csv"
    ...     _ = path.write_text("age;colour\\n41;red\\n37;blue\\n")
    ...     frame, sep = read_raw_csv(path)
    >>> sep
    ';'
    >>> frame.shape
    (2, 2)
    """
    _check_no_nul(path)
    try:
        sep = sep or _sniff_separator(path)
        engine = "c" if len(sep) == 1 else "python"
        return pd.read_csv(path, sep=sep, engine=engine, encoding="utf-8-sig"), sep
    except UnicodeDecodeError:
        raise ValueError(f"{path} is not a CSV file: it is not UTF-8 text") from None
    except pd.errors.EmptyDataError:
        raise ValueError(
            f"{path} is not a CSV file: it is empty (no header row)"
        ) from None
    except (pd.errors.ParserError, ValueError) as exc:
        raise ValueError(f"{path} is not a valid CSV file: {exc}") from None


def _check_no_nul(path):
    """Fail on a NUL byte, which no text CSV holds (pandas keeps it in names)."""
    line = 1
    with open(path, "rb") as stream:
        while chunk := stream.read(_CHUNK_BYTES):
            at = chunk.find(b"\0")
            if at >= 0:
                line += chunk.count(b"\n", 0, at)
                raise ValueError(
                    f"{path} is not a CSV text file: it holds a NUL byte (line "
                    f"{line}), as UTF-16 and binary files do; save it as UTF-8 "
                    "text, or remove the NUL bytes"
                )
            line += chunk.count(b"\n")


def _sniff_separator(path):
    """The delimiter ``csv.Sniffer`` finds in the first lines; ``,`` if none."""
    with open(path, encoding="utf-8-sig", newline="") as stream:
        sample = stream.read(_SNIFF_CHARS)
    if len(sample) == _SNIFF_CHARS and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # no partial last line
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=_SEPARATORS).delimiter
    except csv.Error:  # one column, or no consistent delimiter
        return ","
    return sep if sep in _SEPARATORS else ","
