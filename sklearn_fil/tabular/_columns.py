"""Which raw columns to leave out of a model, and why; numbers stored as text."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import hashlib
import re
import warnings

import pandas as pd
from pandas.api.types import (
    infer_dtype,
    is_numeric_dtype,
    is_object_dtype,
    is_string_dtype,
)

from sklearn_fil.utils._text import plain, preview

_UNNAMED = re.compile(r"Unnamed: \d+")  # pandas' name for an empty header cell
_ID_WORDS = frozenset({"id", "ids", "idx", "index", "key", "uuid", "guid", "rowid"})
MIN_ROWS_PER_LEVEL = 5  # fewer rows per distinct string: free text, not categories
_DATE_SAMPLE = 500  # distinct values tried as dates
_DATE_SHARE = 0.95  # share that must parse (and show a year or a time)
_DATE_HINT = r"\d{4}|\d:\d\d"
_NUMERIC_TEXT_SHARE = 0.9  # share of numbers that makes a text column numeric


def _name_tokens(name):
    """Lower-case words of a column name: ``PatientID`` -> ``['patient', 'id']``."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", str(name))
    return [word.lower() for word in re.split(r"[^0-9A-Za-z]+", spaced) if word]


def _identifier_reason(name, column):
    """Why ``column`` is a row identifier, or None."""
    if not (column.notna().all() and column.is_unique):
        return None
    if _UNNAMED.fullmatch(str(name)):
        return "no name in the header and distinct in every row (a saved row index)"
    words = _name_tokens(name)
    if words and (words[0] in _ID_WORDS or words[-1] in _ID_WORDS):
        return "named like an identifier and distinct in every row"
    return None


def _uninformative_reason(column):
    """Why ``column`` carries no information (empty or constant), or None."""
    values = column.dropna()
    if values.empty:
        return "empty: every value is missing"
    if values.nunique() > 1:
        return None
    missing = len(column) - len(values)
    where = f" ({missing} missing)" if missing else ""
    return f"constant: {plain(values.iloc[0])!r} in every row{where}"


def _looks_like_dates(values):
    """Whether nearly all the (distinct) strings in ``values`` are dates or times."""
    sample = values.astype(str).drop_duplicates().head(_DATE_SAMPLE)
    if sample.str.contains(_DATE_HINT).mean() < _DATE_SHARE:
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pandas' "could not infer format"
        parsed = pd.to_datetime(sample, errors="coerce", format="mixed")
    return parsed.notna().mean() >= _DATE_SHARE


def _text_reason(column, max_levels):
    """Why a string column is dates or free text rather than categories, or None."""
    if is_numeric_dtype(column):
        return None
    values = column.dropna()
    if _looks_like_dates(values):
        return f"dates or times (e.g. {str(values.iloc[0])!r})"
    n_levels = values.nunique()
    if n_levels > max_levels and len(values) < MIN_ROWS_PER_LEVEL * n_levels:
        return (
            f"free text or an identifier: {n_levels} distinct values in "
            f"{len(values)} rows"
        )
    return None


def _duplicate_reason(name, column, seen):
    """``Duplicate of ...`` when an earlier kept column is identical; else record it."""
    digest = pd.util.hash_pandas_object(column, index=False).to_numpy()
    key = (str(column.dtype), hashlib.sha1(digest.tobytes()).hexdigest())
    if key in seen and column.equals(seen[key][1]):
        return f"duplicate of {seen[key][0]!r} (the same value in every row)"
    seen.setdefault(key, (name, column))
    return None


def columns_to_drop(features, drop, keep, max_levels):
    """``{column: reason}`` of the feature columns to leave out, in table order.

    ``drop`` are left out with the reason ``"--drop"``; empty and constant
    columns always; identifiers, dates, free text and duplicates unless in
    ``keep``.
    """
    dropped, seen = {}, {}
    for name in features.columns:
        column = features[name]
        if name in drop:
            reason = "--drop"
        else:
            reason = _uninformative_reason(column)
        if reason is None and name not in keep:
            reason = (
                _identifier_reason(name, column)
                or _text_reason(column, max_levels)
                or _duplicate_reason(name, column, seen)
            )
        if reason is not None:
            dropped[name] = reason
    return dropped


def numbers_in_text(features):
    """``{column: note}`` of the text columns that are nearly all numbers.

    Each such column of ``features`` is replaced, in place, by its numbers
    (the other entries read as missing).
    """
    notes = {}
    for name in features.columns:
        column = features[name]
        text = is_object_dtype(column) or is_string_dtype(column)
        if not text or isinstance(column.dtype, pd.CategoricalDtype):
            continue  # numbers, dates, categories: as they are
        if column.isna().all():
            continue
        values = column.dropna()
        if infer_dtype(values) == "boolean":  # True/False with gaps: categorical
            continue
        numbers = pd.to_numeric(values, errors="coerce")
        if numbers.notna().mean() < _NUMERIC_TEXT_SHARE:
            continue
        bad = values[numbers.isna()].unique()
        features[name] = pd.to_numeric(column, errors="coerce")
        notes[name] = (
            f"{name!r} is numeric: {int(numbers.isna().sum())} non-numeric "
            f"entries ({preview(bad, 3)}) read as missing"
        )
    return notes
