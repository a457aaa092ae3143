"""Loss families of generalised linear models: one object per family.

A family gives, at margin ``m = w^T x`` and label ``y``, the loss, its first
derivative ``r = dl/dm`` (the residual) and second derivative ``c =
d2l/dm2``, and the size of the terms that cancel in ``r`` (to judge whether
a gradient is zero to rounding). Both families are canonical GLMs, so
``d(dl/dm)/dy = -1``: the label column of the per-example Jacobian is ``-x``.

It also carries what the rest of the library would otherwise decide by
comparing family names (the attributes of :class:`_Family`) and the closed
forms of the leave-one-out refits and of the reconstruction attack.
:func:`get_family` is the one place a name becomes a family; every other
module asks the object. ``doc/contributing.rst`` says what a new family takes.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
from scipy.special import expit, lambertw, log_expit

# Margin u* = 1 + W(1/e) (W: Lambert's function) at which u * expit(-u) peaks
# with the value u* - 1: the logistic first-order condition without an
# intercept has two solutions below that value and none above it.
_U_PEAK = 1.0 + float(lambertw(np.exp(-1.0)).real)
_PSI_PEAK = _U_PEAK - 1.0


class _Family:
    """What every family states; the defaults refuse what a family lacks."""

    name = None
    # whether y holds class labels (encoded 0/1) rather than numbers
    is_classifier = False
    # whether l'' = 1 at every margin: the objective is quadratic, its Hessian
    # does not depend on w, one Newton step from anywhere is exact, and the
    # leave-one-out and the attacks have closed forms
    constant_curvature = False
    # whether l(., y) decreases for ever along the margin (no minimising
    # margin): the weights can grow without bound on separable data
    unbounded_margin = False
    # a bound R on |l'''| / l'': the curvature changes at most by a factor
    # exp(R |t|) when the margin moves by t (sklearn_fil._glm._decrease_certified)
    curvature_rate = np.inf

    @classmethod
    def mean_increment_factors(cls, m, omega):
        """For the iterative leave-one-out refits (see _LogisticLoss)."""
        raise NotImplementedError(
            f"The {cls.name} family has no iterative leave-one-out refits."
        )

    @classmethod
    def residual_roots(cls, a, y):
        """For the reconstruction attack without an intercept (see subclasses)."""
        raise NotImplementedError(
            f"The {cls.name} family has no reconstruction without an intercept."
        )


class _SquaredLoss(_Family):
    """``l(m, y) = (m - y)^2 / 2``."""

    name = "squared"
    constant_curvature = True
    curvature_rate = 0.0

    @staticmethod
    def check_y(y):
        return y

    @staticmethod
    def value(m, y):
        return 0.5 * (m - y) ** 2

    @staticmethod
    def derivatives(m, y):
        return m - y, np.ones_like(m)

    @staticmethod
    def residual_scale(m, y):
        """Size of the terms whose difference is the residual ``m - y``."""
        return np.abs(m) + np.abs(y)

    @staticmethod
    def residual_roots(a, y):
        """Both roots ``t`` of ``t^2 + y t - a = 0`` (the vertex ``-y/2`` if none).

        The root of larger magnitude comes from the formula without cancellation,
        the other from the product of the roots, ``-a``.
        """
        disc = y * y + 4.0 * a
        root = np.sqrt(np.maximum(disc, 0.0))
        big = -0.5 * (y + np.where(y >= 0, root, -root))
        with np.errstate(divide="ignore", invalid="ignore"):
            small = np.where(big != 0.0, -a / big, 0.0)
        none = disc < 0
        big[none] = small[none] = -0.5 * y[none]
        n_roots = np.where(none, 0, np.where(disc == 0, 1, 2))
        return np.column_stack([big, small]), n_roots


class _LogisticLoss(_Family):
    """``l(m, y) = -y log s(m) - (1 - y) log(1 - s(m))``, ``y`` in {0, 1}."""

    name = "logistic"
    is_classifier = True
    unbounded_margin = True
    # l'' = s (1 - s) and l''' = l'' (1 - 2 s)
    curvature_rate = 1.0

    @staticmethod
    def check_y(y):
        if not np.all((y == 0) | (y == 1)):
            bad = np.unique(y[(y != 0) & (y != 1)])[:5]
            raise ValueError(
                f"The logistic loss needs labels in {{0, 1}}; got values such as {bad}."
            )
        return y

    @staticmethod
    def value(m, y):
        # y in {0, 1}: one log-sigmoid of +-m, equal to the two-term form to
        # the bit at half its cost (a Newton objective evaluates it per step)
        return -log_expit((2.0 * y - 1.0) * m)

    @staticmethod
    def derivatives(m, y):
        s = expit(m)
        return s - y, s * (1.0 - s)

    @staticmethod
    def residual_scale(m, y):
        """Size of the terms whose difference is the residual ``s(m) - y``."""
        return expit(m) + np.abs(y)

    @staticmethod
    def mean(m):
        """``dl/dm + y``, the sigmoid ``s(m)``."""
        return expit(m)

    @staticmethod
    def mean_increment_factors(m, omega):
        """``sign, E, 1 + E, scale`` with ``omega (s(m + t) - s(m)) = scale q /
        (E q + 1 + E)``, ``q = expm1(-sign t)``: accurate however small ``t``.

        For ``a = |m|``, ``s(a + t) - s(a) = s(-a) (1 - e^-t) / (1 + e^-a
        e^-t)`` (``m < 0`` by symmetry), so ``E = e^-|m|`` and ``scale =
        -sign omega s(-|m|)``.
        """
        sign = np.where(m >= 0, 1.0, -1.0)
        E = np.exp(-np.abs(m))
        onepE = 1.0 + E
        return sign, E, onepE, -sign * omega * E / onepE

    @staticmethod
    def residual_roots(a, y):
        """Both roots ``t`` of ``t = expit(a / t) - y`` (the closest point if none).

        With the signed margin ``u = (2 y - 1) m`` of the reconstructed row, ``t =
        -(2 y - 1) expit(-u)`` and ``a = t m = -psi(u)``, ``psi(u) = u expit(-u)``.
        ``psi`` increases up to its peak ``u* - 1`` at ``u*`` and then decays to
        0, so ``psi(u) = -a`` has one root (``u <= 0``, a misclassified row) when
        ``a >= 0``, one on either side of ``u*`` when ``0 < -a < u* - 1``, and
        none above the peak, where ``u*`` is the closest solution.
        """
        b = -a
        u = np.full((a.size, 2), _U_PEAK)
        one = b <= 0
        two = (b > 0) & (b < _PSI_PEAK)
        # psi(2 b) <= b <= psi(0) = 0 for b <= 0
        u[one, 0] = u[one, 1] = _bisect(
            _psi, b[one], 2.0 * b[one], np.zeros(one.sum()), increasing=True
        )
        # psi(u) < u exp(-u) <= b beyond u = 2 log(1 / b) + 2 (> u*)
        bt = b[two]
        u[two, 0] = _bisect(
            _psi, bt, np.zeros(bt.size), np.full(bt.size, _U_PEAK), increasing=True
        )
        u[two, 1] = _bisect(
            _psi, bt, np.full(bt.size, _U_PEAK), 2.0 * np.log(1.0 / bt) + 2.0, False
        )
        n_roots = np.where(one, 1, np.where(two, 2, np.where(b == _PSI_PEAK, 1, 0)))
        return -(2.0 * y - 1.0)[:, None] * expit(-u), n_roots


def _bisect(f, target, lo, hi, increasing):
    """``u`` in ``[lo, hi]`` with ``f(u) = target`` for every row (``f`` monotone).

    Bisection to full precision: a row stops when no midpoint lies strictly
    between its bounds (at most about 2100 halvings of a finite interval).
    """
    lo, hi = lo.copy(), hi.copy()
    rows = np.arange(lo.size)
    while rows.size:
        mid = lo[rows] + 0.5 * (hi[rows] - lo[rows])
        active = (mid > lo[rows]) & (mid < hi[rows])
        rows, mid = rows[active], mid[active]
        below = (f(mid) < target[rows]) == increasing
        lo[rows[below]] = mid[below]
        hi[rows[~below]] = mid[~below]
    return lo + 0.5 * (hi - lo)


def _psi(u):
    """``u expit(-u)``: ``-a`` as a function of the signed margin ``u``."""
    return u * expit(-u)


LOSSES = {family.name: family for family in (_SquaredLoss, _LogisticLoss)}


def get_family(loss):
    """The family named ``loss`` (a key of :data:`LOSSES`); a family passes through."""
    if isinstance(loss, type) and issubclass(loss, _Family):
        return loss
    try:
        return LOSSES[loss]
    except (KeyError, TypeError):
        raise ValueError(
            f"loss must be one of {sorted(LOSSES)}; got {loss!r}."
        ) from None
