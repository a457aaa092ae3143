"""The most and the least exposed training examples, shown as images."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

from math import isqrt
from numbers import Integral

import numpy as np
import pandas as pd

from sklearn_fil.plotting._base import (
    _check_n,
    _Display,
    _fitted_report,
    _pyplot,
    _report_column,
)

_ROWS = ("most exposed", "least exposed")


def _image_shape(image_shape, n_features):
    """``image_shape`` checked against ``n_features``; a square when None."""
    if image_shape is None:
        side = isqrt(n_features)
        if side * side != n_features:
            raise ValueError(
                f"The {n_features} features are not a perfect square, so they "
                "cannot be shown as a square image: pass image_shape, e.g. "
                "image_shape=(height, width)."
            )
        return (side, side)
    shape = tuple(image_shape)
    if (
        len(shape) not in (2, 3)
        or not all(isinstance(s, Integral) and not isinstance(s, bool) for s in shape)
        or min(shape) < 1
    ):
        raise ValueError(
            "image_shape must be (height, width) or (height, width, channels) "
            f"of positive integers, got {image_shape!r}."
        )
    if int(np.prod(shape)) != n_features:
        raise ValueError(
            f"image_shape={shape} holds {int(np.prod(shape))} pixels, but the "
            f"examples have {n_features} features."
        )
    return shape


class ExposedExamplesDisplay(_Display):
    """The training examples with the largest and the smallest FIL, as images.

    When the features are pixels, the examples a release leaks most and least
    about show what the FIL measures: atypical, hard or mislabelled examples
    at the top, prototypes at the bottom (Hannun et al., 2021, Figure 3).
    Create it with :meth:`from_estimator` or :meth:`from_report`.

    Parameters
    ----------
    images : ndarray of shape (2, n, height, width) or (2, n, height, width, channels)
        Row 0: the most exposed examples, most exposed first; row 1: the
        least exposed, least exposed first.
    fil : ndarray of shape (2, n)
        Their FIL (or other report column).
    index : array-like of shape (2, n), default=None
        Their labels in the report's index, for the titles.
    column : str, default="fil"
        Name of the ranking column.

    Attributes
    ----------
    axes_ : ndarray of shape (2, n) of matplotlib Axes
        One tile per image.
    figure_ : matplotlib Figure
        Figure of the tiles.
    images_ : ndarray of shape (2, n) of matplotlib AxesImage
        The images drawn, as in ``images``.

    See Also
    --------
    FILHistogramDisplay : The distribution of the per-example FIL.

    References
    ----------
    Hannun, Guo & van der Maaten (2021), *Measuring data leakage in
    machine-learning models with Fisher information*, UAI, Figure 3.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn_fil import OutputPerturbedLogisticRegression
    >>> from sklearn_fil.plotting import ExposedExamplesDisplay
    >>> X, y = load_digits(n_class=2, return_X_y=True)
    >>> X = X / 16
    >>> clf = OutputPerturbedLogisticRegression(lam=0.1, random_state=0).fit(X, y)
    >>> display = ExposedExamplesDisplay.from_estimator(clf, X, n=4)
    >>> display.images_.shape, display.images_[0, 0].get_array().shape
    ((2, 4), (8, 8))
    """

    def __init__(self, *, images, fil, index=None, column="fil"):
        self.images = images
        self.fil = fil
        self.index = index
        self.column = column

    def plot(self, ax=None, *, cmap="gray", show_fil=True, **kwargs):
        """Draw the two rows of images.

        Parameters
        ----------
        ax : matplotlib Axes or array-like of 2 n Axes, default=None
            None creates a figure with a 2 x n grid; one Axes is divided into
            that grid (and hidden); an array of 2 n Axes is used as it is,
            row by row.
        cmap : str or Colormap, default="gray"
            Colormap of single-channel images.
        show_fil : bool, default=True
            Title every tile with its value of the ranking column.
        **kwargs : dict
            Passed to ``Axes.imshow``. By default every tile shares one
            colour scale (``vmin``, ``vmax``: the extremes of all images).
        """
        images = np.asarray(self.images)
        if images.ndim not in (4, 5) or images.shape[0] != 2 or images.shape[1] < 1:
            raise ValueError(
                "images must have shape (2, n, height, width[, channels]), got "
                f"{images.shape}."
            )
        n = images.shape[1]
        fil = np.asarray(self.fil, dtype=np.float64)
        if fil.shape != (2, n):
            raise ValueError(f"fil must have shape (2, {n}), got {fil.shape}.")
        index = None if self.index is None else np.asarray(self.index, dtype=object)
        if index is not None and index.shape != (2, n):
            raise ValueError(f"index must have shape (2, {n}), got {index.shape}.")
        plt = _pyplot(f"{type(self).__name__}.plot")
        axes = self._grid(plt, ax, n)
        imshow_kwargs = {"cmap": cmap, **kwargs}
        if images.ndim == 4:
            imshow_kwargs.setdefault("vmin", float(np.nanmin(images)))
            imshow_kwargs.setdefault("vmax", float(np.nanmax(images)))
        self.images_ = np.empty((2, n), dtype=object)
        for row in range(2):
            for k in range(n):
                tile = axes[row, k]
                self.images_[row, k] = tile.imshow(images[row, k], **imshow_kwargs)
                tile.set_xticks([])
                tile.set_yticks([])
                if show_fil:
                    title = f"{fil[row, k]:.3g}"
                    if index is not None:
                        title = f"#{index[row, k]}\n{title}"
                    tile.set_title(title, fontsize="small")
            axes[row, 0].set_ylabel(_ROWS[row])
        self.axes_, self.figure_ = axes, axes[0, 0].figure
        return self

    @staticmethod
    def _grid(plt, ax, n):
        if ax is None:
            _, axes = plt.subplots(
                2, n, figsize=(1.3 * n + 0.6, 3.2), squeeze=False, layout="constrained"
            )
            return axes
        if hasattr(ax, "get_subplotspec"):  # one Axes: divide it
            spec = ax.get_subplotspec()
            if spec is None:
                raise ValueError(
                    "ax must be a subplot (made by subplots or add_subplot) to "
                    "be divided into a grid of tiles."
                )
            figure = ax.figure
            ax.set_axis_off()
            grid = spec.subgridspec(2, n)
            return np.array(
                [[figure.add_subplot(grid[r, k]) for k in range(n)] for r in range(2)]
            )
        axes = np.asarray(ax, dtype=object)
        if axes.size != 2 * n:
            raise ValueError(
                f"ax must be None, one Axes or {2 * n} Axes (2 rows of n={n}), "
                f"got {axes.size}."
            )
        return axes.reshape(2, n)

    @classmethod
    def from_estimator(
        cls,
        estimator,
        X,
        *,
        column="fil",
        n=8,
        image_shape=None,
        ax=None,
        cmap="gray",
        show_fil=True,
        **kwargs,
    ):
        """The most and least exposed training examples of a fitted estimator.

        Parameters
        ----------
        estimator : estimator or Pipeline
            Fitted estimator with a ``privacy_report_`` (not a released
            copy), or a fitted Pipeline whose final step is one.
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The training data, in the order given to ``fit`` (for a Pipeline
            the raw rows, which are shown: the images as they were, not as
            the prefix transformed them).
        column : str, default="fil"
            Report column that ranks the examples, e.g. ``"fil"`` or
            ``"dfil"``.
        n : int, default=8
            Number of examples in each row.
        image_shape : tuple of int, default=None
            Shape of one image, ``(height, width)`` or ``(height, width,
            channels)``; None: a square, which the number of features must
            then be.
        %(parameters)s
        **kwargs : dict
            Passed to ``Axes.imshow``. By default single-channel images share
            the colour scale of the whole of ``X`` (``vmin``, ``vmax``).
        """
        report = _fitted_report(estimator, f"{cls.__name__}.from_estimator")
        return cls.from_report(
            report,
            X,
            column=column,
            n=n,
            image_shape=image_shape,
            ax=ax,
            cmap=cmap,
            show_fil=show_fil,
            **kwargs,
        )

    @classmethod
    def from_report(
        cls,
        report,
        X,
        *,
        column="fil",
        n=8,
        image_shape=None,
        ax=None,
        cmap="gray",
        show_fil=True,
        **kwargs,
    ):
        """The most and least exposed rows of ``X`` by a privacy report.

        Parameters
        ----------
        report : pandas.DataFrame
            One row per example of ``X``, in the same order.
        X : {array-like, DataFrame} of shape (n_samples, n_features)
            The examples, e.g. the training data.
        column : str, default="fil"
            Report column that ranks the examples.
        n : int, default=8
            Number of examples in each row; at most the number of finite
            values of the column.
        image_shape : tuple of int, default=None
            Shape of one image; None: a square.
        %(parameters)s
        **kwargs : dict
            Passed to ``Axes.imshow``. By default single-channel images share
            the colour scale of the whole of ``X`` (``vmin``, ``vmax``).
        """
        fil = _report_column(report, column, f"{cls.__name__}.from_report")
        X = X.to_numpy() if isinstance(X, pd.DataFrame) else np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2d, got shape {X.shape}.")
        if X.shape[0] != fil.size:
            raise ValueError(
                f"X has {X.shape[0]} rows but the report has {fil.size}: pass the "
                "training data, in the order given to fit."
            )
        try:
            X = X.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError("X must be numeric to be shown as images.") from exc
        shape = _image_shape(image_shape, X.shape[1])
        n = _check_n(n)
        finite = np.flatnonzero(np.isfinite(fil))
        if n > finite.size:
            raise ValueError(
                f"n={n} is more than the {finite.size} examples with a finite "
                f"{column!r}."
            )
        # stable ranks: ties keep the order of the report
        most = finite[np.argsort(-fil[finite], kind="stable")[:n]]
        least = finite[np.argsort(fil[finite], kind="stable")[:n]]
        rows = np.stack([most, least])
        if len(shape) == 2:  # one colour scale: that of the whole data set
            kwargs.setdefault("vmin", float(np.nanmin(X)))
            kwargs.setdefault("vmax", float(np.nanmax(X)))
        display = cls(
            images=X[rows].reshape(2, n, *shape),
            fil=fil[rows],
            index=np.asarray(report.index, dtype=object)[rows],
            column=column,
        )
        return display.plot(ax=ax, cmap=cmap, show_fil=show_fil, **kwargs)
