"""The parts of one DP-SGD run, each with one job.

:class:`~sklearn_fil.neural.DPSGDClassifier` trains by composing them: a
:class:`BatchSampler` draws the batches, :func:`clipped_batch` computes the
clipped per-example gradients of one, a :class:`NoisySGD` releases their noisy
sum and takes the step, a :class:`FILAccumulator` and a
:class:`NormAccountant` account every example's exposure, and a
:class:`StepRecorder` keeps chosen steps as :class:`RecordedStep`. For
binary logistic regression on NumPy, :class:`BinaryLinearSteps` does the
work of :func:`clipped_batch` and of the clipped sum in one numba pass.

The batches and the coordinates of the FIL trace estimate come from the one
host generator of the fit, in a fixed order per step: the batch (Poisson
batches are drawn lazily, one per step; a shuffle draws the epoch's
permutation first), then the coordinates. The noise comes from independent
streams over fixed blocks of the parameters
(:class:`~sklearn_fil.neural._noise.NoiseStreams`), seeded by four words that
:class:`NoisySGD` draws from the fit's generator before the first batch (none
without noise).
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import math
from dataclasses import dataclass
from numbers import Integral

import numpy as np

from sklearn_fil import _backend
from sklearn_fil.neural._network import (
    NON_FINITE_GRADIENT,
    check_finite_norms,
    clip_factor,
)
from sklearn_fil.neural._noise import NoiseStreams, seed_sequence

# Sampled coordinates up to which the logistic FIL kernel runs on one thread
# (see linear_fil_accumulate_serial).
_SERIAL_FIL_COORDINATES = 64


def _read_only(array):
    """A read-only host copy of ``array``."""
    out = np.array(_backend.to_numpy(array), copy=True)
    out.flags.writeable = False
    return out


@dataclass(frozen=True)
class RecordedStep:
    """One recorded DP-SGD step: its batch, its starting weights, its release.

    :class:`~sklearn_fil.neural.DPSGDClassifier` keeps one per step of
    ``record_steps`` in ``recorded_steps_``. What a federated-learning
    participant sees of the step is the weights before it and the released
    gradient; the batch is secret, kept for evaluating attacks such as
    :class:`~sklearn_fil.attacks.GradientLabelAttack`. The object is frozen
    and its arrays are read-only host copies; build a changed one with
    :func:`dataclasses.replace`.

    Parameters
    ----------
    step : int
        Step number, counted from 1 over the whole run.
    indices : ndarray of int of shape (batch_size,)
        Rows of the training set in the batch (empty for an empty Poisson
        batch).
    divisor : float
        The public constant the noisy sum was divided by (``batch_size``).
    coefs : tuple of ndarray
        Weights of each layer before the step, ``(n_in, n_out)``.
    intercepts : tuple of ndarray
        Biases of each layer before the step.
    grad_coefs : tuple of ndarray
        Released gradient of each layer's weights: the noised sum of the
        clipped per-example gradients over ``divisor``, before weight decay
        and momentum.
    grad_intercepts : tuple of ndarray
        Released gradient of each layer's biases, likewise.

    Examples
    --------
    >>> import dataclasses
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil.neural import DPSGDClassifier
    >>> X, y = make_classification(n_samples=100, n_features=4, random_state=0)
    >>> clf = DPSGDClassifier(batch_size=10, max_iter=1, record_steps=[2],
    ...                       random_state=0).fit(X, y)
    >>> step = clf.recorded_steps_[0]
    >>> step.step, step.divisor, step.grad_coefs[0].shape
    (2, 10.0, (4, 1))
    >>> dataclasses.replace(step, step=3).step
    3
    """

    step: int
    indices: np.ndarray
    divisor: float
    coefs: tuple
    intercepts: tuple
    grad_coefs: tuple
    grad_intercepts: tuple


def steps_to_record(record_steps):
    """The set of step numbers to record (1-based)."""
    if record_steps is None:
        return frozenset()
    if isinstance(record_steps, Integral):
        return frozenset(range(1, int(record_steps) + 1))
    steps = np.asarray(record_steps)
    if (
        steps.ndim != 1
        or not np.issubdtype(steps.dtype, np.integer)
        or (steps.size and steps.min() < 1)
    ):
        raise ValueError(
            "record_steps must be None, an int, or a 1-D array of step numbers "
            f">= 1; got {record_steps!r}."
        )
    return frozenset(steps.tolist())


class StepRecorder:
    """Keeps the steps of ``record_steps`` as :class:`RecordedStep`.

    Call :meth:`before_step` before the weights move and :meth:`after_step`
    with the released gradients. Recording draws no random numbers.

    Parameters
    ----------
    record_steps : None, int or array-like of int
        The estimator's parameter (see :func:`steps_to_record`).
    """

    def __init__(self, record_steps):
        self.steps = steps_to_record(record_steps)
        self.records = []
        self._start = None

    def before_step(self, t, indices, divisor, net):
        """Copy the batch and the weights of step ``t`` if it is recorded."""
        self._start = None
        if t in self.steps:
            self._start = (
                t,
                _read_only(indices),
                float(divisor),
                tuple(_read_only(W) for W in net.coefs),
                tuple(_read_only(b) for b in net.intercepts),
            )

    def after_step(self, released):
        """Record the released ``(grad_W, grad_b)`` of each layer, if wanted."""
        if self._start is None:
            return
        t, indices, divisor, coefs, intercepts = self._start
        self.records.append(
            RecordedStep(
                step=t,
                indices=indices,
                divisor=divisor,
                coefs=coefs,
                intercepts=intercepts,
                grad_coefs=tuple(_read_only(gW) for gW, _ in released),
                grad_intercepts=tuple(_read_only(gb) for _, gb in released),
            )
        )
        self._start = None


def poisson_batch(rng, n, q):
    """Indices of ``n`` examples each included with probability ``q``.

    The gaps between included indices are independent geometric variables, so
    drawing them costs O(batch) instead of one uniform per example.
    """
    found, last = [], -1
    while True:
        remaining = n - 1 - last
        gaps = rng.geometric(q, size=int(1.2 * q * remaining) + 16)
        candidates = last + np.cumsum(gaps)
        inside = candidates[candidates < n]
        found.append(inside)
        if inside.size < candidates.size:
            return np.concatenate(found)
        last = int(candidates[-1])


class BatchSampler:
    """The batches of an epoch, from public constants only.

    Parameters
    ----------
    n : int
        Number of training examples (the rows the indices refer to).
    n_public : int
        The public number of examples the rate and the step count come from:
        ``n`` under replace-one, ``public_n_samples`` under add/remove.
    batch_size : int
        Expected batch size; also the divisor of the noisy sum.
    poisson : bool
        Poisson sampling at rate ``q = batch_size / n_public``; otherwise a
        random partition of ``0..n-1`` per epoch.

    Attributes
    ----------
    q : float
        Sampling rate.
    steps_per_epoch : int
        ``max(1, round(n_public / batch_size))``.
    divisor : float
        ``batch_size``, never the realised batch size.
    """

    def __init__(self, n, n_public, batch_size, poisson):
        self.n = n
        self.poisson = poisson
        self.q = batch_size / n_public
        self.steps_per_epoch = max(1, round(n_public / batch_size))
        self.divisor = float(batch_size)

    def epoch(self, rng):
        """The epoch's batches of host indices.

        Poisson batches are a generator, each drawn when its step starts; a
        shuffle draws the permutation at once.
        """
        if self.poisson:
            return (
                poisson_batch(rng, self.n, self.q) for _ in range(self.steps_per_epoch)
            )
        return np.array_split(rng.permutation(self.n), self.steps_per_epoch)


@dataclass
class ClippedBatch:
    """Forward and backward pass of a batch with its clip factors.

    ``norms`` are the unclipped gradient norms, ``c`` and ``dc`` the clip
    factors and their derivatives in the norm. ``data`` and ``x_sq``, set by
    :class:`BinaryLinearSteps` when ``acts`` is None: the whole data, whose
    rows ``rows.indices`` are the batch, and the rows' squared norms.
    """

    acts: list
    logits: object
    deltas: list
    norms: object
    c: object
    dc: object
    data: object = None
    x_sq: object = None

    @property
    def passes(self):
        """``(acts, logits, deltas, norms, c, dc)``, the Jacobians' arguments."""
        return self.acts, self.logits, self.deltas, self.norms, self.c, self.dc


class FiniteCheck:
    """Raises on a non-finite gradient norm, at once or once per epoch.

    NumPy norms are checked at every step; other namespaces keep a device
    flag per step and are checked by :meth:`end_epoch`, so that no step
    waits for a transfer.
    """

    def __init__(self, xp):
        self.xp = xp
        self.flags = []

    def __call__(self, norms):
        """Check ``norms`` now (NumPy) or keep its flag."""
        if self.xp is np:
            check_finite_norms(norms, self.xp)
        else:
            self.flags.append(self.xp.all(self.xp.isfinite(norms)))

    def end_epoch(self):
        """Raise a ValueError if any kept flag is false, then forget them."""
        if not all(bool(f) for f in self.flags):
            raise ValueError(NON_FINITE_GRADIENT)
        self.flags = []


def clipped_batch(net, Xb, Yb, max_grad_norm, clipping, finite):
    """The clipped per-example gradients of a batch, as a :class:`ClippedBatch`."""
    acts, logits = net.forward(Xb)
    deltas = net.backward(acts, logits, Yb)
    norms = net.grad_norms(acts, deltas)
    finite(norms)
    c, dc = clip_factor(norms, max_grad_norm, clipping, net.xp)
    return ClippedBatch(acts, logits, deltas, norms, c, dc)


class BinaryLinearSteps:
    """The clipped sums of binary logistic regression by one numba pass a step.

    For a NumPy network without hidden layers and one output,
    :func:`~sklearn_fil.neural._kernels.binary_clipped_sum` does the work of
    :func:`clipped_batch` and :meth:`Network.weighted_sum
    <sklearn_fil.neural._network.Network.weighted_sum>` reading each sampled
    row of ``X`` once: the same values, to rounding. For the FIL accounting
    it also keeps the margins, the errors, the rows' squared norms and the
    derivatives of the clip factors; the FIL kernel then reads the batch's
    rows from ``X`` (in cache after the step), and the batch is copied out
    only for the one-hot groups' generic code (``gather``).
    Make it after :class:`NoisySGD`, whose flat vector the network's weights
    then are (the kernel reads them there).

    ``X`` and ``Y`` are the whole training data and its ``(n, 1)`` labels,
    ``grads`` is :attr:`NoisySGD.grads`, written by each step.
    """

    def __init__(self, net, X, Y, max_grad_norm, clipping, grads):
        self.X, self.Y = X, Y
        self.C, self.clipping = float(max_grad_norm), clipping
        from sklearn_fil.neural import _kernels as k

        codes = {None: k.CLIP_NONE, "hard": k.CLIP_HARD, "gelu": k.CLIP_GELU}
        self.code = codes[clipping]
        self.w = net.coefs[0].reshape(-1)  # views: they follow the updates
        self.b = net.intercepts[0]
        self.grad_w = grads[0][0].reshape(-1)
        self.grad_b = grads[0][1]
        if not (
            np.shares_memory(self.w, net.coefs[0])
            and np.shares_memory(self.grad_w, grads[0][0])
        ):
            raise ValueError("BinaryLinearSteps needs contiguous weights.")
        self._rows = np.empty((0, X.shape[1]))

    @staticmethod
    def applies(net, X, Y):
        """Whether the kernel can take this network's steps on ``X``, ``Y``."""
        return (
            net.xp is np
            and len(net.coefs) == 1
            and net.binary
            and isinstance(X, np.ndarray)
            and X.dtype == np.float64
            and X.flags.c_contiguous
            and Y.dtype == np.float64
        )

    def __call__(self, indices, fil=False, gather=False):
        """The :class:`ClippedBatch` of ``indices``, the clipped sums written.

        Without ``fil`` only its ``norms`` and ``c`` are set; ``acts`` is
        None unless ``gather``. None when
        the kernel cannot vouch for its norms (see
        :func:`~sklearn_fil.neural._kernels.binary_clipped_sum`): the
        general path must take the step.
        """
        from sklearn_fil.neural._kernels import binary_clipped_sum

        b = indices.size
        norms, c, z, delta, x_sq = (np.empty(b) for _ in range(5))
        gathered = self._rows[:0]
        if gather:
            if self._rows.shape[0] < b:  # grows, then is reused
                self._rows = np.empty(
                    (max(b, 2 * self._rows.shape[0]), *self._rows.shape[1:])
                )
            gathered = self._rows[:b]
        grad_b, exact = binary_clipped_sum(
            self.X,
            self.Y,
            indices,
            self.w,
            float(self.b[0]),
            self.C,
            self.code,
            self.grad_w,
            norms,
            c,
            z,
            delta,
            x_sq,
            gathered,
        )
        if not exact:
            return None
        self.grad_b[0] = grad_b
        if not fil:
            return ClippedBatch(None, None, None, norms, c, None)
        # c again with its derivative: the FIL's ``c + dc ||g||`` cancels
        # (to 0 for a GELU factor of C / ||g||) only between values of one
        # computation; the kernel's differ from SciPy's by an ulp or so
        c, dc = clip_factor(norms, self.C, self.clipping, np)
        acts = [gathered] if gather else None
        return ClippedBatch(
            acts, z[:, None], [delta[:, None]], norms, c, dc, self.X, x_sq
        )


def parameter_layout(net):
    """``(offset, shape)`` of each weight matrix, then of each bias, in a flat vector.

    The layout of the noise (see :mod:`sklearn_fil.neural._noise`) and of the
    NumPy parameters: every layer's weights in C order, then every bias.

    Returns
    -------
    coefs, intercepts : list of (int, tuple)
    size : int
    """
    offset, coefs, intercepts = 0, [], []
    for arrays, layout in ((net.coefs, coefs), (net.intercepts, intercepts)):
        for a in arrays:
            layout.append((offset, tuple(a.shape)))
            offset += math.prod(a.shape)
    return coefs, intercepts, offset


def _views(flat, layout):
    return [flat[o : o + math.prod(shape)].reshape(shape) for o, shape in layout]


class NoisySGD:
    """The released update and the SGD step with momentum.

    The released gradient of each layer is the clipped sum plus
    ``N(0, (noise_multiplier C)^2 I)`` noise, divided by the public
    ``divisor``; the step adds the weight decay ``alpha W`` (weights only),
    then heavy-ball momentum, in place. The noise comes from
    :class:`~sklearn_fil.neural._noise.NoiseStreams` seeded from ``rng``
    when the optimiser is made (four words drawn, none when ``sigma = 0``).

    On NumPy the network's weights and biases become views of one flat
    vector (:func:`parameter_layout`), the clipped sums are written into
    :attr:`grads`, the deviates are drawn into one buffer and the release and
    update are one pass of
    :func:`~sklearn_fil.neural._kernels.noisy_sgd_block`. Other namespaces
    draw the same deviates on the host and update on the device.

    Parameters
    ----------
    net : Network
        The network whose weights the steps update in place.
    noise_multiplier, max_grad_norm : float
        ``sigma`` and ``C``; no noise when ``sigma = 0``.
    divisor : float
        Public divisor of the noisy sum.
    learning_rate, momentum, alpha : float
        Step size, momentum and L2 penalty on the weights.
    device : object
        Device of the network's arrays (the noise is sent there).
    rng : numpy.random.RandomState or Generator
        The fit's generator, the noise's seed.

    Attributes
    ----------
    grads : list of (ndarray, ndarray) or None
        NumPy: the buffers of each layer's clipped sum (coef, intercept),
        for :meth:`Network.weighted_sum
        <sklearn_fil.neural._network.Network.weighted_sum>` to write into;
        None elsewhere.
    """

    def __init__(
        self,
        net,
        *,
        noise_multiplier,
        max_grad_norm,
        divisor,
        learning_rate,
        momentum,
        alpha,
        device,
        rng,
    ):
        self.sigma = noise_multiplier
        self.C = max_grad_norm
        self.divisor = divisor
        self.lr, self.momentum, self.alpha = learning_rate, momentum, alpha
        self.device = device
        coefs, intercepts, self.size = parameter_layout(net)
        self.layout = (coefs, intercepts)
        self.noise = None
        if self.sigma > 0:
            self.noise = NoiseStreams(self.size, seed_sequence(rng))
        self.grads = None
        if net.xp is np:
            self._flat_numpy(net)
        else:
            self.velocity = [
                (net.xp.zeros_like(W), net.xp.zeros_like(b))
                for W, b in zip(net.coefs, net.intercepts, strict=True)
            ]

    def _flat_numpy(self, net):
        """Move the weights into one flat vector; allocate the step's buffers."""
        coefs, intercepts = self.layout
        self.params = np.empty(self.size)
        self.n_weights = intercepts[0][0]
        for layout, arrays in ((coefs, net.coefs), (intercepts, net.intercepts)):
            views = _views(self.params, layout)
            for view, a in zip(views, arrays, strict=True):
                view[...] = a
            arrays[:] = views
        self.flat_grads = np.zeros(self.size)
        self.grads = list(
            zip(
                _views(self.flat_grads, coefs),
                _views(self.flat_grads, intercepts),
                strict=True,
            )
        )
        self.flat_velocity = np.zeros(self.size if self.momentum else 0)
        self.z = np.empty(self.size if self.noise is not None else 0)

    def detach(self, net):
        """Give the NumPy network its own arrays again (copies of the views)."""
        if net.xp is np:
            net.coefs[:] = [W.copy() for W in net.coefs]
            net.intercepts[:] = [b.copy() for b in net.intercepts]

    def step(self, net, grads):
        """Release the noisy gradient of ``grads`` and update ``net``.

        Parameters
        ----------
        net : Network
            Updated in place.
        grads : list of (ndarray, ndarray) or None
            Clipped sums per layer (on NumPy, best :attr:`grads` itself);
            None for an empty Poisson batch, which releases noise alone.

        Returns
        -------
        released : list of (ndarray, ndarray)
            The released gradient of each layer, before decay and momentum
            (on NumPy, :attr:`grads`: valid until the next step).
        """
        if net.xp is np:
            return self._step_numpy(grads)
        return self._step_generic(net, grads)

    def _step_numpy(self, grads):
        from sklearn_fil.neural._kernels import noisy_sgd_block

        if grads is None:
            self.flat_grads.fill(0.0)
        elif grads is not self.grads:
            for (gW, gb), (W, b) in zip(grads, self.grads, strict=True):
                W[...], b[...] = gW, gb
        if self.noise is not None:
            self.noise.fill(self.z)
        std = self.sigma * self.C if self.noise is not None else 0.0
        noisy_sgd_block(
            0,
            self.size,
            std,
            self.z,
            self.flat_grads,
            self.params,
            self.flat_velocity,
            self.n_weights,
            self.divisor,
            self.lr,
            self.momentum,
            self.alpha,
        )
        return self.grads

    def _step_generic(self, net, grads):
        xp = net.xp
        if grads is None:
            grads = [
                (xp.zeros_like(W), xp.zeros_like(b))
                for W, b in zip(net.coefs, net.intercepts, strict=True)
            ]
        noise = None
        if self.noise is not None:
            # the deviates of the NumPy path, drawn on the host, sent over
            z = np.empty(self.size)
            self.noise.fill(z)
            z *= self.sigma * self.C
            coefs, intercepts = self.layout
            noise = zip(_views(z, coefs), _views(z, intercepts), strict=True)
        released = []
        for layer, (gW, gb) in enumerate(grads):
            W, b = net.coefs[layer], net.intercepts[layer]
            if noise is not None:
                noise_W, noise_b = next(noise)
                gW = gW + _backend.asarray(noise_W, xp, self.device)
                gb = gb + _backend.asarray(noise_b, xp, self.device)
            gW, gb = gW / self.divisor, gb / self.divisor
            released.append((gW, gb))
            gW = gW + self.alpha * W
            vW, vb = self.velocity[layer]
            vW = self.momentum * vW + gW
            vb = self.momentum * vb + gb
            self.velocity[layer] = (vW, vb)
            W -= self.lr * vW
            b -= self.lr * vb
        return released


class FILAccumulator:
    """Per-example Fisher information of the released steps (Guo et al. §6).

    Each step adds, for every example of its batch, ``kappa / (sigma C)^2``
    times the squared Jacobian norms of its clipped gradient about its
    features (summed over the sampled coordinates, times ``d / m``) and, with
    a private label, about its label. A constrained one-hot group ``G`` of
    ``k`` columns is measured on the tangent space ``{v : sum_{j in G} v_j =
    0}`` of its sum-to-one constraint: its trace is ``sum_{j in G} ||J e_j||^2
    - ||J 1_G||^2 / k`` (``1_G`` the group's all-ones direction, as
    :meth:`~sklearn_fil.neural._network.Network.label_sq_norm` does for a
    one-hot label), so each step also accumulates ``||J 1_G||^2``; with
    sampled coordinates the trace less this exact correction stays unbiased
    (clamped at zero).

    Parameters
    ----------
    n, d : int
        Number of examples and of features.
    scale : float
        ``kappa / (sigma C)^2``.
    fil_coordinates : int or None
        Coordinates sampled per step; None (or ``>= d``) uses all of them and
        keeps the per-feature sums.
    private_label : bool
        Whether to accumulate the label's information.
    xp, device : module, object
        Where the accumulators live.
    groups : list of ndarray of int, default=()
        Column indices of each constrained one-hot group (host arrays).
    """

    def __init__(
        self, n, d, *, scale, fil_coordinates, private_label, xp, device, groups=()
    ):
        self.d = d
        self.scale = scale
        self.fil_coordinates = fil_coordinates
        self.xp, self.device = xp, device
        self.coords_all = _backend.asarray(np.arange(d), xp, device)
        self.trace = _backend.zeros(n, xp, device)
        self.label_sq = _backend.zeros(n, xp, device) if private_label else None
        self.attr_sq = (
            _backend.zeros((n, d), xp, device) if fil_coordinates is None else None
        )
        self.groups = [np.asarray(cols, dtype=np.int64) for cols in groups]
        self.directions = self.ones_sq = None
        if self.groups:
            ones = np.zeros((len(self.groups), d))
            for g, cols in enumerate(self.groups):
                ones[g, cols] = 1.0
            self.directions = _backend.asarray(ones, xp, device)
            self.ones_sq = _backend.zeros((n, len(self.groups)), xp, device)

    def _coordinates(self, rng):
        """The step's coordinates (a draw of ``rng`` when sampling) and ``m``."""
        if self.fil_coordinates is None or self.fil_coordinates >= self.d:
            return self.coords_all, self.d
        m = self.fil_coordinates
        coords = np.sort(rng.choice(self.d, m, replace=False))
        return _backend.asarray(coords, self.xp, self.device), m

    def add(self, net, rows, batch, rng):
        """Add one batch's information (``rows``: its :class:`_backend.Rows`)."""
        coords, m = self._coordinates(rng)
        d, scale = self.d, self.scale
        if self.xp is np and len(net.coefs) == 1:
            # NumPy logistic fast path: one numba pass adds straight into the
            # accumulators (reading the batch's rows from the whole data when
            # they were not gathered)
            from sklearn_fil.neural import _kernels

            whole = batch.acts is None
            kernel = _kernels.linear_fil_accumulate
            if coords.size <= _SERIAL_FIL_COORDINATES:
                kernel = _kernels.linear_fil_accumulate_serial
            kernel(
                batch.data if whole else batch.acts[0],
                np.ascontiguousarray(coords, dtype=np.int64),
                net.coefs[0],
                net.proba(batch.logits),
                batch.deltas[0],
                batch.norms,
                batch.c,
                batch.dc,
                rows.indices,
                scale,
                d / m,
                self.trace,
                np.empty((0, 0)) if self.attr_sq is None else self.attr_sq,
                whole,
            )
        else:
            sq = net.jacobian_sq_norms(*batch.passes, coords)
            rows.add(self.trace, scale * self.xp.sum(sq, axis=1) * (d / m))
            if self.attr_sq is not None:
                rows.add(self.attr_sq, scale * sq)
        if self.ones_sq is not None:
            # ||J 1_G||^2 of every group, by the generic code on every path
            ones = net.direction_sq_norms(*batch.passes, self.directions)
            rows.add(self.ones_sq, scale * ones)
        if self.label_sq is not None:
            label = net.label_sq_norm(
                batch.acts, batch.deltas, batch.norms, batch.c, batch.dc, batch.x_sq
            )
            rows.add(self.label_sq, scale * label)

    def result(self, n_outputs):
        """Host ``fil``, ``dfil``, ``mse_bound``, per-feature, group and label FIL.

        ``n_outputs`` is the width of the one-hot label (1 when binary): a
        private label adds ``max(1, n_outputs - 1)`` private coordinates. A
        one-hot group of ``k`` columns counts ``k - 1``: its trace is on the
        tangent space of its constraint (``group_fil``, one column per group,
        None without per-feature sums), and so is its part of ``fil``.
        """
        trace = _backend.to_numpy(self.trace)
        attr_sq = None if self.attr_sq is None else _backend.to_numpy(self.attr_sq)
        label_sq = None if self.label_sq is None else _backend.to_numpy(self.label_sq)
        group_fil = None
        if self.groups:
            sizes = np.array([cols.size for cols in self.groups], dtype=np.float64)
            correction = _backend.to_numpy(self.ones_sq) / sizes
            # the sums of squares differ by the radial part of each group's
            # block; rounding (or a sampled trace) can leave them below zero
            trace = np.maximum(trace - correction.sum(axis=1), 0.0)
            if attr_sq is not None:
                group_sq = np.column_stack(
                    [attr_sq[:, cols].sum(axis=1) for cols in self.groups]
                )
                group_fil = np.sqrt(np.maximum(group_sq - correction, 0.0))
        # private coordinates: the features (k - 1 per one-hot group), and the
        # label (one, or the K - 1 dimensions of a one-hot label's constraint
        # plane)
        k = self.d - len(self.groups)
        if label_sq is not None:
            trace = trace + label_sq
            k += max(1, n_outputs - 1)
        dfil = np.sqrt(trace / k)
        with np.errstate(divide="ignore"):
            mse_bound = 1.0 / dfil**2
        return {
            "fil": np.sqrt(trace),
            "dfil": dfil,
            "mse_bound": mse_bound,
            "attribute_fil": None if attr_sq is None else np.sqrt(attr_sq),
            "group_fil": group_fil,
            "label_fil": None if label_sq is None else np.sqrt(label_sq),
        }


def replay(accountant, pending, xp):
    """Account the steps ``pending`` on the host, in order.

    Parameters
    ----------
    accountant : PerInstanceAccountant
        Host accountant.
    pending : list of (ndarray of int, array or None)
        Each step's batch indices (host) and new clipped norms (in ``xp``;
        None for an empty batch). All norms come back in one transfer.
    xp : module
        Namespace of the norms.
    """
    parts = [v for _, v in pending if v is not None]
    if parts:
        flat = _backend.to_numpy(
            parts[0] if len(parts) == 1 else _backend.concat(parts, xp)
        )
    start = 0
    for idx, values in pending:
        if values is None:
            accountant.step(np.empty(0), indices=idx)
            continue
        accountant.step(flat[start : start + idx.size], indices=idx)
        start += idx.size


class NormAccountant:
    """Every example's latest clipped norm, and the per-instance accountant.

    The norms (in units of ``C``, on the device) are set by a full pass and
    updated whenever an example is sampled. The per-instance accountant runs
    on the host: NumPy steps are accounted as they come; on another
    namespace each step's ``(indices, norms)`` wait here and are replayed in
    order once per epoch (:meth:`end_epoch`), one transfer per epoch.

    Without the accountant the first full pass is deferred (:meth:`defer`):
    only the rows never sampled before the end (or a refresh) need their
    norm at the initial weights, and :meth:`finish` computes just those (a
    third of the rows after one Poisson epoch, about ``e^-k`` after ``k``).

    Parameters
    ----------
    accountant : PerInstanceAccountant or None
        None when per-instance accounting is off.
    xp : module
        Namespace of the norms.
    """

    def __init__(self, accountant, xp):
        self.accountant = accountant
        self.xp = xp
        self.norms = None
        self.pending = []
        self.unseen = self.initial = None

    def defer(self, net, n, device):
        """Start with no norm computed, keeping a copy of the initial ``net``."""
        self.norms = _backend.zeros(n, self.xp, device)
        self.unseen = np.ones(n, dtype=bool)
        self.initial = type(net)(
            [W * 1.0 for W in net.coefs],  # copies, in any namespace
            [b * 1.0 for b in net.intercepts],
            net.activation,
            xp=net.xp,
        )

    def refresh(self, norms):
        """Replace every norm (a full pass); the accountant gets them too."""
        self.norms = norms
        if self.unseen is not None:
            self.unseen[:] = False
        if self.accountant is not None:
            self.accountant.set_norms(_backend.to_numpy(norms))

    def update(self, rows, new_norms):
        """Set the norms of the rows of a batch."""
        rows.set(self.norms, new_norms)
        if self.unseen is not None:
            self.unseen[rows.indices] = False

    def finish(self, full_pass, device):
        """Norms of the rows still unseen, by ``full_pass(initial_net, rows)``."""
        if self.unseen is not None and self.unseen.any():
            rows = np.flatnonzero(self.unseen)
            values = full_pass(self.initial, rows)
            _backend.Rows(rows, self.unseen.size, self.xp, device).set(
                self.norms, values
            )
        self.unseen = self.initial = None

    def step(self, indices, new_norms):
        """Account one step's batch and its norms (None for an empty batch).

        NumPy norms go to the accountant at once; other namespaces queue
        them for :meth:`end_epoch`, so that no step waits for a transfer.
        """
        if self.accountant is not None:
            self.pending.append((indices, new_norms))
            if self.xp is np:
                self.end_epoch()

    def end_epoch(self):
        """Replay the queued steps into the accountant."""
        if self.accountant is not None:
            replay(self.accountant, self.pending, self.xp)
            self.pending = []
