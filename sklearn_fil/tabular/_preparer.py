"""TablePreparer: a raw table's columns as the inputs of a private model."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from numbers import Integral
from typing import ClassVar

import numpy as np
import pandas as pd
from pandas.api.types import is_bool_dtype, is_float_dtype, is_numeric_dtype
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler
from sklearn.utils.validation import check_is_fitted

from sklearn_fil.tabular._columns import columns_to_drop, numbers_in_text
from sklearn_fil.tabular._leaks import target_leaks
from sklearn_fil.utils._sklearn_compat import Interval, _fit_context
from sklearn_fil.utils._text import preview


class TablePreparer(TransformerMixin, BaseEstimator):
    """Type, clean and encode a raw table's columns for a private model.

    The raw-table preparation of ``sklearn-fil report``, as a transformer to
    put first in a :class:`~sklearn.pipeline.Pipeline`. On the columns of a
    :class:`pandas.DataFrame`, in this order:

    - a text column whose entries are nearly all (90 %) numbers becomes
      numeric, the other entries missing (``notes_`` says which);
    - columns are left out, each with its reason (``dropped_columns_``):
      those named in ``drop``; empty and constant ones; unless named in
      ``keep``, row identifiers (distinct in every row and named like an
      identifier, or unnamed, as a saved row index), dates or times, free
      text (more than ``max_levels`` distinct strings and fewer than 5 rows
      per string) and duplicates of an earlier column;
    - numeric columns have their missing values imputed by the median and
      are standardised; the others (text, true/false, and the numeric ones
      named in ``categorical``) have theirs imputed by the most frequent
      value and are one-hot encoded, ``column=level``, with at most
      ``max_levels`` levels (the ``max_levels - 1`` most frequent and one
      ``(other)``).

    Every step is fitted on every row: the imputed values, the scaling and
    the levels depend on each example, and the FIL and ε of the model fitted
    after this transformer cover the transformed rows, not this step.

    Parameters
    ----------
    drop : list of str, default=None
        Columns to leave out (their reason is ``"--drop"``, the command's
        option).
    keep : list of str, default=None
        Columns to keep although they look like identifiers, free text, dates
        or duplicates (empty and constant columns are always left out).
    categorical : list of str, default=None
        Numeric columns (integer codes) to one-hot encode instead of
        standardising them.
    max_levels : int, default=20
        One-hot inputs per categorical column, at least 2; also the number of
        distinct strings above which a text column may be free text.

    Attributes
    ----------
    feature_names_in_ : ndarray of str of shape (`n_features_in_`,)
        The columns of the table seen in :meth:`fit`.
    n_features_in_ : int
        Their number.
    dropped_columns_ : dict of str to str
        ``{column: reason}`` of the columns left out, in table order.
    features_ : pandas.DataFrame
        One row per column used, indexed by its name (numeric columns first):
        ``kind`` (``"numeric"`` or ``"categorical"``), ``inputs`` (the output
        columns it became), ``n_levels`` (distinct values of a categorical
        column, ``<NA>`` for a numeric one) and ``n_missing`` (the values
        imputed).
    onehot_groups_ : dict of str to list of str
        ``{categorical column: its one-hot output columns}``: the
        ``onehot_groups`` of an sklearn-fil estimator fitted on the output,
        which then reports each categorical column as one attribute.
    notes_ : dict of str to str
        ``{column: note}`` of the text columns read as numbers, each note
        counting (and showing) the entries read as missing.
    target_leaks_ : dict of str to float
        For a binary ``y`` given to :meth:`fit`: ``{column: share}`` of the
        columns that alone predict ``y`` for that share of the rows, close to
        1 (by the majority class of each value, or by the best threshold of
        a numeric column with many values): a column recorded after, or
        derived from, the outcome. Empty otherwise.
    column_transformer_ : sklearn.compose.ColumnTransformer
        The fitted imputation, scaling and one-hot encoding.

    See Also
    --------
    read_raw_csv : Read a CSV file as it is, its delimiter sniffed.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_fil.tabular import TablePreparer
    >>> table = pd.DataFrame({
    ...     "id": [101, 102, 103, 104, 105, 106],
    ...     "age": [34, 51, None, 29, 62, 45],
    ...     "colour": ["red", "blue", "red", "green", "blue", "red"],
    ... })
    >>> prep = TablePreparer()
    >>> prep.fit_transform(table).columns.tolist()
    ['age', 'colour=blue', 'colour=green', 'colour=red']
    >>> prep.dropped_columns_
    {'id': 'named like an identifier and distinct in every row'}
    >>> prep.onehot_groups_
    {'colour': ['colour=blue', 'colour=green', 'colour=red']}
    >>> prep.features_[["kind", "n_levels", "n_missing"]]
                   kind  n_levels  n_missing
    column
    age         numeric      <NA>          1
    colour  categorical         3          0

    In a pipeline, the estimator measures each categorical column as one
    attribute when given the fitted preparer's groups:

    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> y = [1.0, 2.5, 1.5, 0.5, 3.0, 2.0]
    >>> est = OutputPerturbedLinearRegression(
    ...     lam=1.0, onehot_groups=prep.onehot_groups_, random_state=0)
    >>> pipe = make_pipeline(TablePreparer(), est).fit(table, y)
    >>> [c for c in pipe[-1].privacy_report_.columns if c.startswith("fil[")]
    ['fil[age]', 'fil[colour]', 'fil[y]']
    """

    _parameter_constraints: ClassVar[dict] = {
        "drop": ["array-like", None],
        "keep": ["array-like", None],
        "categorical": ["array-like", None],
        "max_levels": [Interval(Integral, 2, None, closed="left")],
    }

    def __init__(self, *, drop=None, keep=None, categorical=None, max_levels=20):
        self.drop = drop
        self.keep = keep
        self.categorical = categorical
        self.max_levels = max_levels

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Decide the type and fate of each column and fit the encoding.

        Parameters
        ----------
        X : pandas.DataFrame of shape (n_samples, n_features)
            The raw table, columns named by strings, missing values allowed.
        y : array-like of shape (n_samples,), default=None
            The target; when it has two distinct values, the columns that
            alone predict it are listed in ``target_leaks_``.

        Returns
        -------
        self : TablePreparer
            The fitted transformer.
        """
        self._fit_transform(X, y)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_transform(self, X, y=None):
        """:meth:`fit`, then :meth:`transform` of ``X``.

        Parameters
        ----------
        X : pandas.DataFrame of shape (n_samples, n_features)
            As in :meth:`fit`.
        y : array-like of shape (n_samples,), default=None
            As in :meth:`fit`.

        Returns
        -------
        X_out : pandas.DataFrame of shape (n_samples, n_features_out)
            As :meth:`transform` returns it.
        """
        return self._fit_transform(X, y)

    def transform(self, X):
        """Return the model inputs of a table with the fitted columns.

        Parameters
        ----------
        X : pandas.DataFrame of shape (n_samples, n_features)
            A table with the columns seen in :meth:`fit` (others are ignored).

        Returns
        -------
        X_out : pandas.DataFrame of shape (n_samples, n_features_out)
            Standardised numeric columns, then the one-hot columns of each
            categorical column, named by :meth:`get_feature_names_out`; a
            level not seen in :meth:`fit` encodes as all zeros.
        """
        check_is_fitted(self, "column_transformer_")
        X = _check_frame(X)
        missing = [name for name in self.feature_names_in_ if name not in X.columns]
        if missing:
            raise ValueError(f"X lacks the fitted column(s) {preview(missing)}.")
        X = X[list(self.feature_names_in_)].copy()
        for name in self.notes_:
            X[name] = pd.to_numeric(X[name], errors="coerce")
        X = X.drop(columns=list(self.dropped_columns_))
        for name in self.onehot_groups_:
            X[name] = _category_text(X[name])
        return self.column_transformer_.transform(X)

    def get_feature_names_out(self, input_features=None):
        """Names of the output columns: the numeric columns, then ``column=level``.

        Parameters
        ----------
        input_features : array-like of str, default=None
            Ignored; the names come from the fit.

        Returns
        -------
        feature_names_out : ndarray of str
            One name per output column; a pooled level is ``column=(other)``.
        """
        check_is_fitted(self, "column_transformer_")
        return self.column_transformer_.get_feature_names_out()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        tags.transformer_tags.preserves_dtype = []
        return tags

    def _fit_transform(self, X, y):
        """Fit every attribute; return the encoded ``X``."""
        X = _check_frame(X)
        self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = X.shape[1]
        drop, keep, categorical = self._column_lists(X)
        features = X.copy()
        self.notes_ = numbers_in_text(features)
        self.dropped_columns_ = columns_to_drop(features, drop, keep, self.max_levels)
        features = features.drop(columns=list(self.dropped_columns_))
        if features.shape[1] == 0:
            raise ValueError(
                "no feature columns left: every column was dropped "
                f"({preview(self.dropped_columns_)}); keep one with keep "
                "(the command's --keep COL)"
            )
        self.target_leaks_ = _leaks(features, y, self.max_levels)
        categorical = [
            name
            for name in features.columns
            if name in categorical
            or is_bool_dtype(features[name])
            or not is_numeric_dtype(features[name])
        ]
        for name in categorical:
            features[name] = _category_text(features[name])
        numeric = [name for name in features.columns if name not in categorical]
        self.column_transformer_ = _make_transformer(
            numeric, categorical, self.max_levels
        )
        X_out = self.column_transformer_.fit_transform(features)
        self._describe(features, numeric, categorical)
        return X_out

    def _column_lists(self, X):
        """``drop``, ``keep`` and ``categorical`` as lists, checked against ``X``."""
        lists = {
            "drop": list(self.drop if self.drop is not None else ()),
            "keep": list(self.keep if self.keep is not None else ()),
            "categorical": list(
                self.categorical if self.categorical is not None else ()
            ),
        }
        for param, names in lists.items():
            unknown = [name for name in names if name not in X.columns]
            if unknown:
                raise ValueError(f"{param} names no column of X: {preview(unknown)}.")
        both = [name for name in lists["drop"] if name in lists["keep"]]
        if both:
            raise ValueError(f"{preview(both)} given to both drop and keep.")
        return lists["drop"], lists["keep"], lists["categorical"]

    def _describe(self, features, numeric, categorical):
        """Set ``features_`` and ``onehot_groups_`` from the fitted encoding."""
        missing = features.isna().sum()
        ct = self.column_transformer_
        self.onehot_groups_ = {
            name: list(ct.get_feature_names_out()[ct.output_indices_[f"c{j}"]])
            for j, name in enumerate(categorical)
        }
        rows = [(name, "numeric", [name], None) for name in numeric]
        rows += [
            (name, "categorical", inputs, int(features[name].nunique()))
            for name, inputs in self.onehot_groups_.items()
        ]
        self.features_ = pd.DataFrame(
            {
                "kind": [row[1] for row in rows],
                "inputs": [row[2] for row in rows],
                "n_levels": pd.array([row[3] for row in rows], dtype="Int64"),
                "n_missing": [int(missing[row[0]]) for row in rows],
            },
            index=pd.Index([row[0] for row in rows], name="column"),
        )


def _check_frame(X):
    """``X`` if it is a pandas DataFrame, else a clear error."""
    if not isinstance(X, pd.DataFrame):
        raise TypeError(
            "TablePreparer prepares the columns of a pandas DataFrame, got "
            f"{type(X).__name__}."
        )
    return X


def _leaks(features, y, max_levels):
    """:func:`target_leaks` of a binary ``y``; empty without one."""
    if y is None:
        return {}
    y = y if isinstance(y, pd.Series) else pd.Series(np.asarray(y))
    if len(y) != len(features):
        raise ValueError(f"y has {len(y)} rows, X {len(features)}.")
    return target_leaks(features, y, max_levels) if y.nunique() == 2 else {}


def _category_text(column):
    """A categorical column as strings (whole floats without ``.0``), NaN kept."""
    values = column.dropna()
    if is_float_dtype(values) and (values % 1 == 0).all():
        values = values.astype("int64")
    return values.astype(str).reindex(column.index).astype(object)


def _level_name(column, level):
    """The name of a one-hot input: ``column=level``."""
    return f"{column}={'(other)' if level == 'infrequent_sklearn' else level}"


def _make_transformer(numeric, categorical, max_levels):
    """Impute (median) and standardise ``numeric``; impute and one-hot the others."""
    steps = []
    if numeric:
        scale = make_pipeline(SimpleImputer(strategy="median"), StandardScaler())
        steps.append(("numeric", scale, numeric))
    for j, name in enumerate(categorical):
        encoder = OneHotEncoder(
            handle_unknown="ignore",
            sparse_output=False,
            max_categories=max_levels,
            feature_name_combiner=_level_name,
        )
        impute = SimpleImputer(strategy="most_frequent")
        steps.append((f"c{j}", make_pipeline(impute, encoder), [name]))
    transformer = ColumnTransformer(steps, verbose_feature_names_out=False)
    return transformer.set_output(transform="pandas")
