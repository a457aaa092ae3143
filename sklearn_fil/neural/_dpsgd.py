"""DP-SGD for logistic regression and tanh MLPs, with per-example accounting."""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import dataclasses
import itertools
import sys
import warnings
from dataclasses import dataclass
from numbers import Integral, Real
from typing import ClassVar

import numpy as np
import pandas as pd
import sklearn
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.preprocessing import LabelBinarizer
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_fil import _backend
from sklearn_fil._glm import check_squares_finite
from sklearn_fil._report import privacy_report_frame, target_label
from sklearn_fil.accounting import (
    Guarantee,
    PerInstanceAccountant,
    check_delta,
    dpsgd_dp_event,
    dpsgd_epsilon,
    dpsgd_noise_multiplier,
    fil_subsampling_factor,
    gelu_clip_max_norm,
)
from sklearn_fil.neural._network import Network, check_finite_norms, clip_factor
from sklearn_fil.neural._training import (
    BatchSampler,
    BinaryLinearSteps,
    FILAccumulator,
    FiniteCheck,
    NoisySGD,
    NormAccountant,
    StepRecorder,
    clipped_batch,
    steps_to_record,
)
from sklearn_fil.utils._baseline import fit_quality, warn_if_useless
from sklearn_fil.utils._fitted import fit_or_clear
from sklearn_fil.utils._guarantee import GuaranteeMixin
from sklearn_fil.utils._labels import LABEL_SET, check_target, label_set
from sklearn_fil.utils._onehot import (
    check_onehot_groups,
    detect_onehot_groups,
    onehot_columns,
)
from sklearn_fil.utils._random import noise_rng
from sklearn_fil.utils._release import (
    FITTED_PARAMS,
    record_fitted_params,
    released_copy,
)
from sklearn_fil.utils._sklearn_compat import Interval, StrOptions, _fit_context
from sklearn_fil.utils._sparse import as_csr, issparse

_MECHANISM = "DP-SGD: clipped per-example gradients, Gaussian noise on their sum"

# Fitted attributes that release() publishes.
_PUBLIC = (
    "coefs_",
    "intercepts_",
    "classes_",
    "n_features_in_",
    "feature_names_in_",
    "n_iter_",
    "t_",
    "noise_multiplier_",
)


def _per_instance_orders():
    """The integer Renyi orders of dp-accounting's default set.

    Their RDP has a closed form that is cheap for every norm level (fractional
    orders below 2 can take seconds per level); they only matter when the
    optimal order is below 2. dp-accounting is imported on first use.
    """
    from dp_accounting.rdp.rdp_privacy_accountant import DEFAULT_RDP_ORDERS

    return np.array(
        [a for a in DEFAULT_RDP_ORDERS if float(a).is_integer()], dtype=np.float64
    )


# Rows per block of the full passes over the data (every example's norm, the
# loss column of the report): the activations of a block stay in the caches.
_FULL_PASS_ROWS = 4096

_NO_NOISE_MSG = (
    "No differential-privacy guarantee: noise_multiplier=0 adds no noise, so "
    "epsilon is infinite and no Fisher information loss is reported."
)
_NO_CLIP_MSG = (
    "No differential-privacy guarantee: clipping=None leaves the per-example "
    "gradients unbounded, so epsilon is infinite and no Fisher information loss "
    "is reported."
)

# The noise multipliers of a noisy run (why: see noise_multiplier).
_NOISE_RANGE = (1e-3, 1e6)
# Steps of one run: 10^6 steps take minutes to hours, and a plan beyond them
# is a mistake (a huge public_n_samples, a tiny batch_size).
_MAX_STEPS = 10**6
# Largest learning_rate * max_grad_norm: how far one example's clipped
# gradient can move the weights in one step (times its share of the batch).
_MAX_STEP_SIZE = 1e6
# public_n_samples within this factor of the realised n (add/remove).
_PUBLIC_N_FACTOR = 10


@dataclass(frozen=True)
class _Plan:
    """The public constants of one run.

    ``sigma``: ``noise_multiplier`` or the one calibrated to
    ``target_epsilon``; ``sensitivity``: ``s``, the largest clipped norm in
    units of ``C``; ``private``: noise and clipping (a guarantee);
    ``replace_one``: the relation of ``epsilon_`` (else add/remove).
    """

    sampler: BatchSampler
    total_steps: int
    sigma: float
    C: float
    sensitivity: float
    delta: float
    private: bool
    replace_one: bool


def _composition(plan, max_iter, neighboring_relation):
    """The accountants' keyword arguments for the run's composition.

    Poisson sampling composes ``total_steps`` subsampled Gaussian mechanisms;
    shuffled batches compose one unsampled mechanism per epoch.
    """
    poisson = plan.sampler.poisson
    return {
        "noise_multiplier": plan.sigma,
        "sample_rate": plan.sampler.q if poisson else 1.0,
        "steps": plan.total_steps if poisson else max_iter,
        "sensitivity": plan.sensitivity,
        "neighboring_relation": neighboring_relation,
    }


def _dp_guarantee(
    plan, accountant, neighboring_relation, max_iter, target=None, assumed=()
):
    """The :class:`Guarantee` of a private run, with its epsilon and event.

    ``assumed``: what else the release reads from the data, and the guarantee
    therefore assumes public (the label set, a detected one-hot layout).
    """
    run = _composition(plan, max_iter, neighboring_relation)
    epsilon = dpsgd_epsilon(**run, delta=plan.delta, accountant=accountant)
    event, event_relation = dpsgd_dp_event(**run)  # the event of that epsilon
    if plan.sampler.poisson:
        how = f"Poisson sampling q={plan.sampler.q:.6g}, {plan.total_steps} steps"
    else:
        how = (
            f"shuffled batches, one Gaussian mechanism per epoch, "
            f"{max_iter} epochs, no amplification"
        )
    calibrated = ""
    if target is not None:
        calibrated = f", noise_multiplier calibrated to epsilon={target:g}"
    return Guarantee(
        epsilon=epsilon,
        delta=plan.delta,
        neighboring_relation=neighboring_relation,
        public=(
            ("n_samples",)
            if plan.replace_one
            else ("public_n_samples", "sample_rate", "steps")
        )
        + tuple(assumed),
        mechanism=f"{_MECHANISM}, divided by batch_size; {how}",
        accountant=(
            f"{accountant.upper()} (dp-accounting, "
            f"{'REPLACE_ONE' if plan.replace_one else 'ADD_OR_REMOVE_ONE'})"
            f"{calibrated}"
        ),
        sensitivity=(2.0 if plan.replace_one else 1.0) * plan.sensitivity * plan.C,
        noise_std=plan.sigma * plan.C,
        dp_event=event,
        event_relation=event_relation,
    )


class DPSGDClassifier(GuaranteeMixin, ClassifierMixin, BaseEstimator):
    """Differentially private SGD for logistic regression and tanh MLPs.

    Each step samples every training example with probability ``q =
    batch_size / n`` (Poisson sampling, which the accountants assume), clips
    each example's gradient to norm ``max_grad_norm = C``, sums, adds
    ``N(0, (noise_multiplier * C)^2 I)`` and divides by the public constant
    ``batch_size`` (never by the realised batch size) before an SGD step with
    momentum. The fitted model reports, for every training example, three
    measures of its exposure:

    * ``epsilon_`` at ``delta_``: the worst-case guarantee of every example
      under ``neighboring_relation``, from dp-accounting (``guarantee_``);
    * the per-instance epsilon of Yu et al. (2022) from the example's own
      gradient norms (column ``epsilon`` of ``privacy_report_``);
    * the Fisher information loss accounting of Guo et al. (2022, section 6):
      the trace of the Fisher information of all released steps about the
      example's features, scaled by the subsampling factor ``kappa``;
      columns ``fil``, ``dfil`` and ``mse_bound``.

    The privacy report is itself sensitive: it is computed from each
    example's data and must not be published; publish :meth:`release` only.
    The release holds the noised weights, the fit's parameters and
    ``classes_``, the label set: give it in advance (``classes``), or the
    guarantee assumes the label set read from the training data public.
    A fixed ``random_state`` makes the noise reproducible and therefore not
    private.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default=()
        Widths of the hidden layers; ``()`` is (multinomial) logistic
        regression.
    activation : {"tanh", "relu"}, default="tanh"
        Hidden activation. The FIL accounting needs a smooth network, so
        ``"relu"`` requires ``fil_accounting=False``.
    noise_multiplier : float, default=1.0
        Noise standard deviation in units of ``max_grad_norm``, ``0`` or in
        ``[1e-3, 1e6]``. ``0`` trains without privacy: infinite epsilon (with
        a :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`) and no FIL.
        Below ``1e-3`` epsilon would exceed ``10^5``, which certifies nothing
        (and overflows dp-accounting's PLD accountant); above ``1e6`` the
        steps are noise and epsilon is 0 to float precision. Ignored when
        ``target_epsilon`` is set (``noise_multiplier_`` is the noise used).
    max_grad_norm : float, default=1.0
        Clipping bound ``C``, in ``[1e-100, 1e100]``: the accounting squares
        ``C`` and divides by it, which must neither overflow nor underflow.
    clipping : {"gelu", "hard"} or None, default="gelu"
        ``"hard"``: ``g min(1, C / ||g||)``. ``"gelu"``: ``g / (GELU(||g|| / C -
        1) + 1)``, smooth, with norms up to about ``1.1152 C`` (the exact
        maximum, :func:`~sklearn_fil.accounting.gelu_clip_max_norm`, is the
        sensitivity used by the accountants). The FIL accounting differentiates
        hard clipping wherever it is differentiable (all but ``||g|| = C``);
        GELU clipping, the smooth choice of Guo et al., needs no such caveat.
        ``None`` does not clip: no privacy guarantee.
    batch_size : int, default=256
        Expected batch size; the sampling rate is ``batch_size / n`` (``n =
        public_n_samples`` under add/remove). The noisy sum is divided by it.
    learning_rate : float, default=0.1
        Step size. ``learning_rate * max_grad_norm``, how far one example's
        clipped gradient moves the weights in a step (times its share of the
        batch), must be at most ``1e6``.
    momentum : float, default=0.0
        Heavy-ball momentum in ``[0, 1)``.
    alpha : float, default=0.0
        L2 penalty ``alpha / 2 ||W||^2`` on the weights (not the biases);
        it does not depend on the data, so it costs no privacy.
    max_iter : int, default=10
        Number of epochs; an epoch is ``round(n / batch_size)`` steps (``n =
        public_n_samples`` under add/remove). A run takes at most ``10^6``
        steps (a ``ValueError`` before any work beyond them).
    sampling : {"poisson", "shuffle"}, default="poisson"
        ``"shuffle"`` visits every example once per epoch in batches of a
        random partition of ``0..n-1``; an example is then in exactly one
        batch per epoch, so the accountants compose one unsampled Gaussian
        mechanism per epoch at the sensitivity of the relation (no
        amplification by subsampling). The partition depends on ``n``, so
        shuffling requires ``neighboring_relation="replace_one"``.
    neighboring_relation : {"replace_one", "add_remove"}, default="replace_one"
        The relation under which ``epsilon_`` holds. ``"replace_one"``:
        neighbouring training sets differ in one example, replaced by any
        other; ``n`` is public (as are ``q = batch_size / n`` and the step
        count). One step's noisy sum then moves by up to twice the largest
        clipped norm, ``2 s C`` with ``s = 1`` for hard clipping and ``s =``
        :func:`~sklearn_fil.accounting.gelu_clip_max_norm` ``(1)`` ``~ 1.1152``
        for GELU clipping. ``"add_remove"``: one example added or removed;
        the sampling rate, step count and divisor must not depend on ``n``,
        so it requires ``public_n_samples``; the sum moves by up to ``s C``.
    public_n_samples : int, default=None
        A number of examples the user declares public, required by (and
        only allowed with) ``neighboring_relation="add_remove"``: the
        sampling rate is ``batch_size / public_n_samples`` and an epoch is
        ``round(public_n_samples / batch_size)`` steps, whatever the realised
        number of training examples. A realised number more than 10 times
        off warns (never refuses, which would make the release depend on the
        private number).
    accountant : {"pld", "rdp"}, default="pld"
        Accountant of ``epsilon_``. ``"pld"``, dp-accounting's privacy loss
        distributions, is the tighter one and the only one with a
        replace-one analysis of Poisson sampling; ``"rdp"`` serves shuffled
        batches and add/remove (with Poisson sampling under replace-one it
        raises a ``ValueError`` before any work).
    delta : float, default=None
        Target delta; None means ``min(1e-5, 1 / (10 n))``
        (:func:`~sklearn_fil.accounting.default_delta`), with ``n =
        public_n_samples`` under add/remove (the realised ``n`` is private
        there). A delta of ``1 / n`` or more triggers a
        :class:`~sklearn_fil.exceptions.PrivacyLeakWarning`.
    target_epsilon : float, default=None
        Calibrate ``noise_multiplier_`` before training so that ``epsilon_``
        is at most ``target_epsilon`` (within ``1e-4`` relative below it):
        dp-accounting's ``calibrate_dp_mechanism`` over the very event and
        accountant ``epsilon_`` comes from -- the sampling rate, the step
        count, the sensitivity ``2 s C`` (replace-one) or ``s C``, ``delta``
        (:func:`~sklearn_fil.accounting.dpsgd_noise_multiplier`).
        ``noise_multiplier`` is then ignored. Needs clipping. In ``[1e-6,
        1e5]``: a smaller epsilon is 0 for every purpose and beyond the
        calibration's float64 arithmetic; a larger one certifies nothing. A
        target that even a noise multiplier of ``1e6`` misses (at a tiny
        ``delta``) is a ``ValueError`` before any work.
    per_instance_accounting : bool, default=True
        Whether to account the per-instance epsilon of every example
        (Poisson sampling only; add/remove of the example, see
        ``privacy_report_``); otherwise the report's ``epsilon`` column
        holds ``epsilon_`` for everyone (memory: see
        :class:`~sklearn_fil.accounting.PerInstanceAccountant`).
    fil_accounting : bool, default=True
        Whether to account the Fisher information loss of every example.
    private_label : bool, default=True
        Whether the label is a private coordinate of each example in the FIL
        accounting: a binary label as one coordinate, a one-hot label on the
        plane where its values sum to one; adds the column ``fil[<target>]``.
        True by default, as in the GLMs: the label is usually the most
        exposed attribute. ``epsilon_`` covers the label either way.
    classes : array-like, default=None
        Every label the task can have, fixed before seeing the data (as
        scikit-learn's ``partial_fit`` takes them); a training label outside
        them is an error, and a class without training examples still has
        its output unit. ``classes_`` (and with it the shape of the last
        layer) is published by :meth:`release`: None reads it from the
        training labels, and the guarantee then assumes the label set
        public (``"classes"`` in ``guarantee_.public``), since replacing the
        only example of a class would change it. Give ``classes`` for a
        guarantee that does not.
    fil_coordinates : int, default=None
        Input coordinates sampled per step for an unbiased estimate of the
        trace of each example's Fisher information; None uses all of them
        (exact, and adds the per-feature ``fil[<feature>]`` columns).
    onehot_groups : dict or "auto", default=None
        Constrained one-hot groups, ``{name: [columns]}`` with each column a
        feature name or index, as in the GLMs, or ``"auto"`` to find the
        blocks that :class:`~sklearn.preprocessing.OneHotEncoder` writes
        (as :class:`~sklearn_fil.linear_model.OutputPerturbedLogisticRegression`
        finds them; the groups found are the fit's ``onehot_groups`` in
        :meth:`release`'s parameters). The groups change only the FIL
        accounting, not the training, but a layout read from the data is
        published with the parameters, so with ``"auto"`` the guarantee
        assumes it public (``"onehot_groups"`` in ``guarantee_.public``): it
        covers neighbours whose one-hot columns have the same layout, which
        holds when every level of every encoded column is known in advance
        (give the encoder its ``categories``). Each group's columns must hold
        0/1 values with exactly one 1 per row (checked before any work). A
        group of ``k`` columns is one attribute ``fil[<name>]``, measured on
        the ``k - 1`` dimensions of its constraint's tangent space (see
        ``FILAccumulator`` in ``neural/_training.py``).
    norm_precision : float, default=0.01
        Per-instance accounting rounds each gradient norm (in units of
        ``C``) up to a multiple of this.
    norm_refresh : int, default=None
        Recompute every example's gradient norm with a full pass every this
        many epochs; otherwise a norm is updated when its example is sampled
        (every norm is computed once before training).
    record_steps : int or array-like of int, default=None
        Steps (numbered from 1) whose released update to keep in
        ``recorded_steps_``; an int ``k`` keeps the first ``k``. None keeps
        none. Recording draws no random numbers, so it never changes training.
    backend : {"auto", "numpy", "cupy"}, default="auto"
        Where training computes. ``"auto"`` follows scikit-learn's array API
        rule: arrays of another namespace (CuPy on a GPU, ``array_api_strict``)
        compute in their namespace inside
        ``sklearn.config_context(array_api_dispatch=True)``, everything else
        with NumPy (and numba). ``"numpy"`` always computes on the host.
        ``"cupy"`` moves the input to the GPU (needs ``pip install
        sklearn-fil[gpu]``). The random numbers (initialisation, sampling,
        noise) are drawn on the host by the same NumPy generator whatever the
        backend, so a backend changes the results only by floating-point
        rounding; see the Notes.
    random_state : int, RandomState instance or None, default=None
        Seeds the initialisation, the sampling and the noise. None draws from
        fresh OS entropy.
    verbose : int, default=0
        Print one line per epoch.

    Attributes
    ----------
    coefs_ : list of ndarray
        Released weights of each layer, ``(n_in, n_out)``.
    intercepts_ : list of ndarray
        Released biases.
    classes_ : ndarray
        Class labels: the sorted ``classes``, or those of the training
        labels (then assumed public by ``guarantee_``).
    n_iter_ : int
        Epochs run.
    t_ : int
        Steps taken.
    recorded_steps_ : list of RecordedStep
        One frozen :class:`~sklearn_fil.neural.RecordedStep` per step of
        ``record_steps``: the ``step`` number, the batch ``indices``, the
        ``divisor`` of the sum, the weights before the step (``coefs``,
        ``intercepts``) and the released gradient of each layer
        (``grad_coefs``, ``grad_intercepts``: the noised sum of clipped
        gradients over ``divisor``, before weight decay and momentum). The
        batch indices are secret: this is material for auditing attacks, and
        :meth:`release` drops it.
    guarantee_ : Guarantee
        The DP guarantee: ``epsilon``, ``delta``, the
        ``neighboring_relation``, what is ``public`` (``("n_samples",)``
        under replace-one; ``("public_n_samples", "sample_rate", "steps")``
        under add/remove; then ``"classes"`` when ``classes`` is None and
        ``"onehot_groups"`` with ``onehot_groups="auto"``), the
        ``mechanism``, the ``accountant``, and the
        ``sensitivity`` of one step's sum (``2 s C`` or ``s C``) with the
        ``noise_std`` ``noise_multiplier * C`` in the same units.
    epsilon_ : float or None
        Epsilon of the (epsilon, delta)-DP guarantee; None (with a warning)
        without one.
    delta_ : float or None
        Its delta.
    dp_event_ : dp_accounting.DpEvent or None
        The run as a dp-accounting event (``guarantee_.dp_event``):
        ``SelfComposedDpEvent(PoissonSampledDpEvent(q,
        GaussianDpEvent(noise_multiplier_ / s)), steps)`` under Poisson
        sampling, to compose under ``guarantee_.event_relation``
        (``REPLACE_ONE`` for replace-one, PLD accountant only); one unsampled
        Gaussian mechanism per epoch at unit distance otherwise. None (with a
        warning) without a guarantee.
    noise_multiplier_ : float
        The noise multiplier of the run: ``noise_multiplier``, or the one
        calibrated to ``target_epsilon``.
    privacy_report_ : pandas.DataFrame
        One row per training example: ``fil``, ``dfil``, ``mse_bound``
        (Guo et al. Theorem 2), ``fil[<feature>]`` when
        ``fil_coordinates=None`` (and ``fil[<target>]`` with
        ``private_label=True``), then ``epsilon`` (per-instance),
        ``grad_norm`` (the latest clipped gradient norm in units of ``C``)
        and ``loss`` (at the released weights). ``fil`` is ``sqrt(Tr I_i)``,
        an upper bound on the spectral FIL (the largest eigenvalue of a sum
        of per-step matrices is not a sum of per-step quantities).

        ``epsilon`` is the per-instance epsilon of Yu et al. (2022) under
        **add/remove of that one example**, at the run's ``q`` and steps: at
        every step, the RDP of the Poisson-subsampled Gaussian at the
        example's latest known clipped norm (updated whenever it is sampled,
        rounded up to ``norm_precision``, capped at ``s``), capped by the
        add/remove RDP epsilon of the whole run. It is not a replace-one
        quantity even when ``epsilon_`` is, and an estimate, not a guarantee
        (a norm can grow between two samplings of its example).
    attribute_fil_ : pandas.Series
        FIL of each attribute of the report (``fil[<name>]``: a feature, a
        one-hot group, the label) over all training examples,
        ``sqrt(sum_i fil[<name>]_i^2)``: the trace form, an upper bound on
        the spectral norm the GLMs report. Empty without per-attribute
        columns.
    dataset_fil_ : float
        FIL of the whole training set, ``sqrt(sum_i fil_i^2)``. NaN without
        FIL accounting.
    n_features_in_ : int
        Number of features.
    feature_names_in_ : ndarray of str
        Feature names, when X was a DataFrame.

    Notes
    -----
    Outside NumPy, the whole step -- forward and backward passes, clipping,
    noisy update, FIL accumulators, latest gradient norms -- runs in the
    namespace of the data, on its device. Per step, the host sends the batch
    indices, the noise (one value per parameter) and, with
    ``fil_coordinates``, the sampled coordinates; nothing comes back. The
    per-instance accountant lives on the host: the clipped norms of each
    epoch's batches are copied back once per epoch, in one transfer, and
    replayed into it in order (plus one copy of all norms at each full
    pass). The weights, the report columns and the norms are copied to the
    host once, at the end: fitted attributes are NumPy arrays whatever the
    backend. A namespace without integer-array assignment (the array API
    standard has none; NumPy and CuPy do) also receives an ``n``-length row
    mask per update of the per-example accumulators.

    References
    ----------
    Abadi et al. (2016), *Deep learning with differential privacy*, CCS.
    Yu et al. (2022), *Per-instance privacy accounting for differentially
    private stochastic gradient descent*.
    Guo, Karrer, Chaudhuri & van der Maaten (2022), *Bounding training data
    reconstruction in private (deep) learning*, ICML.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn_fil.neural import DPSGDClassifier
    >>> X, y = make_classification(n_samples=500, n_features=5, random_state=0)
    >>> clf = DPSGDClassifier(noise_multiplier=1.0, batch_size=50, max_iter=5,
    ...                       learning_rate=0.5, classes=[0, 1],
    ...                       random_state=0).fit(X, y)
    >>> round(clf.epsilon_, 2), clf.delta_
    (8.51, 1e-05)

    The label set was given, so the guarantee assumes only ``n`` public
    (without ``classes`` it would list ``"classes"`` too):

    >>> clf.guarantee_.neighboring_relation, clf.guarantee_.public
    ('replace_one', ('n_samples',))
    >>> list(clf.privacy_report_.columns)  # doctest: +NORMALIZE_WHITESPACE
    ['fil', 'dfil', 'mse_bound', 'fil[x0]', 'fil[x1]', 'fil[x2]', 'fil[x3]',
     'fil[x4]', 'fil[y]', 'epsilon', 'grad_norm', 'loss']
    """

    _parameter_constraints: ClassVar[dict] = {
        "hidden_layer_sizes": [tuple, list],
        "activation": [StrOptions({"tanh", "relu"})],
        # 0 or in _NOISE_RANGE (checked with its reason by _check_relation)
        "noise_multiplier": [Interval(Real, 0, _NOISE_RANGE[1], closed="both")],
        "max_grad_norm": [Interval(Real, 1e-100, 1e100, closed="both")],
        "clipping": [StrOptions({"gelu", "hard"}), None],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "momentum": [Interval(Real, 0, 1, closed="left")],
        "alpha": [Interval(Real, 0, None, closed="left")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "sampling": [StrOptions({"poisson", "shuffle"})],
        "neighboring_relation": [StrOptions({"replace_one", "add_remove"})],
        "public_n_samples": [None, Interval(Integral, 1, None, closed="left")],
        "accountant": [StrOptions({"rdp", "pld"})],
        "delta": [None, Interval(Real, 0, 1, closed="neither")],
        "target_epsilon": [None, Interval(Real, 1e-6, 1e5, closed="both")],
        "per_instance_accounting": ["boolean"],
        "fil_accounting": ["boolean"],
        "private_label": ["boolean"],
        "classes": [None, "array-like"],
        "fil_coordinates": [None, Interval(Integral, 1, None, closed="left")],
        "onehot_groups": [None, dict, StrOptions({"auto"})],
        "norm_precision": [Interval(Real, 0, None, closed="neither")],
        "norm_refresh": [None, Interval(Integral, 1, None, closed="left")],
        "record_steps": [
            None,
            Interval(Integral, 0, None, closed="left"),
            "array-like",
        ],
        "backend": [StrOptions({"auto", "numpy", "cupy"})],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    # Binary logistic regression on NumPy takes its steps by one numba pass
    # each (BinaryLinearSteps); False forces the general path (tests compare
    # the two).
    _fast_linear = True

    def __init__(
        self,
        *,
        hidden_layer_sizes=(),
        activation="tanh",
        noise_multiplier=1.0,
        max_grad_norm=1.0,
        clipping="gelu",
        batch_size=256,
        learning_rate=0.1,
        momentum=0.0,
        alpha=0.0,
        max_iter=10,
        sampling="poisson",
        neighboring_relation="replace_one",
        public_n_samples=None,
        accountant="pld",
        delta=None,
        target_epsilon=None,
        per_instance_accounting=True,
        fil_accounting=True,
        private_label=True,
        classes=None,
        fil_coordinates=None,
        onehot_groups=None,
        norm_precision=0.01,
        norm_refresh=None,
        record_steps=None,
        backend="auto",
        random_state=None,
        verbose=0,
    ):
        self.hidden_layer_sizes = hidden_layer_sizes
        self.activation = activation
        self.noise_multiplier = noise_multiplier
        self.max_grad_norm = max_grad_norm
        self.clipping = clipping
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.momentum = momentum
        self.alpha = alpha
        self.max_iter = max_iter
        self.sampling = sampling
        self.neighboring_relation = neighboring_relation
        self.public_n_samples = public_n_samples
        self.accountant = accountant
        self.delta = delta
        self.target_epsilon = target_epsilon
        self.per_instance_accounting = per_instance_accounting
        self.fil_accounting = fil_accounting
        self.private_label = private_label
        self.classes = classes
        self.fil_coordinates = fil_coordinates
        self.onehot_groups = onehot_groups
        self.norm_precision = norm_precision
        self.norm_refresh = norm_refresh
        self.record_steps = record_steps
        self.backend = backend
        self.random_state = random_state
        self.verbose = verbose

    def _check_relation(self):
        """Checks of the parameters together, before any work."""
        low = _NOISE_RANGE[0]
        if 0 < self.noise_multiplier < low and self.target_epsilon is None:
            raise ValueError(
                f"noise_multiplier={self.noise_multiplier!r} is below {low:g}: "
                "epsilon would exceed 10^5, which certifies nothing (and "
                "overflows dp-accounting's PLD accountant). Use "
                f"noise_multiplier >= {low:g}, or noise_multiplier=0 for a run "
                "without privacy."
            )
        step = self.learning_rate * self.max_grad_norm
        if step > _MAX_STEP_SIZE:
            raise ValueError(
                f"learning_rate={self.learning_rate!r} with max_grad_norm="
                f"{self.max_grad_norm!r} lets one example's clipped gradient "
                f"move the weights by up to {step:.3g} per step (more with the "
                f"noise); at most {_MAX_STEP_SIZE:g} is allowed. Use "
                f"learning_rate <= {_MAX_STEP_SIZE / self.max_grad_norm:.3g}."
            )
        if self.neighboring_relation == "add_remove":
            if self.public_n_samples is None:
                raise ValueError(
                    "neighboring_relation='add_remove' needs public_n_samples: "
                    "the sampling rate batch_size / n and the number of steps "
                    "must not depend on the private number of examples n. Give "
                    "a public number of examples, or use "
                    "neighboring_relation='replace_one' (n public)."
                )
            if self.sampling == "shuffle":
                raise ValueError(
                    "sampling='shuffle' cannot be accounted under "
                    "neighboring_relation='add_remove': the partition into "
                    "batches depends on the number of examples. Use "
                    "sampling='poisson' with public_n_samples, or "
                    "neighboring_relation='replace_one'."
                )
            if self.batch_size > self.public_n_samples:
                raise ValueError(
                    f"batch_size={self.batch_size} exceeds "
                    f"public_n_samples={self.public_n_samples}."
                )
        elif self.public_n_samples is not None:
            raise ValueError(
                "public_n_samples is only used with "
                "neighboring_relation='add_remove' (under 'replace_one' the "
                "number of examples is public and used as it is); got "
                f"public_n_samples={self.public_n_samples!r}."
            )
        if self.target_epsilon is not None and self.clipping is None:
            raise ValueError(
                f"target_epsilon={self.target_epsilon!r} needs clipping: with "
                "clipping=None the per-example gradients are unbounded and no "
                "noise gives a finite epsilon. Use clipping='gelu' or 'hard'."
            )
        noisy = self.noise_multiplier > 0 or self.target_epsilon is not None
        if (
            self.accountant == "rdp"
            and self.sampling == "poisson"
            and self.neighboring_relation == "replace_one"
            and noisy
            and self.clipping is not None
        ):
            raise ValueError(
                "accountant='rdp' cannot account Poisson sampling under "
                "neighboring_relation='replace_one' (dp-accounting's RDP "
                "accountant has no replace-one analysis of the "
                "Poisson-subsampled Gaussian). Use accountant='pld' (the "
                "default), sampling='shuffle', or "
                "neighboring_relation='add_remove' with public_n_samples."
            )

    def _check_settings(self, n):
        """Checks that need the data or several parameters at once."""
        sizes = tuple(self.hidden_layer_sizes)
        if not all(isinstance(s, Integral) and s >= 1 for s in sizes):
            raise ValueError(
                f"hidden_layer_sizes must hold positive integers; got {sizes!r}."
            )
        steps_to_record(self.record_steps)  # checked before any work
        if self.neighboring_relation == "replace_one" and self.batch_size > n:
            raise ValueError(
                f"batch_size={self.batch_size} exceeds the number of examples ({n})."
            )
        public_n = self.public_n_samples
        # A warning, not an error: whether a model is released must not
        # depend on the private n under add/remove. (A huge public_n_samples
        # is refused from public values alone: its plan's step count.)
        if public_n is not None and not (
            public_n <= _PUBLIC_N_FACTOR * n and n <= _PUBLIC_N_FACTOR * public_n
        ):
            warnings.warn(
                f"public_n_samples={public_n} is more than {_PUBLIC_N_FACTOR} "
                f"times {'above' if public_n > n else 'below'} the number of "
                f"training examples: sampled at the rate batch_size / "
                f"public_n_samples, the batches average "
                f"{self.batch_size * n / public_n:.3g} examples for "
                f"batch_size={self.batch_size}, and the model may learn little. "
                "Give a closer public estimate of the number of examples.",
                UserWarning,
                stacklevel=6,
            )
        if self.fil_accounting and sizes and self.activation != "tanh":
            raise ValueError(
                "The Fisher information loss needs a smooth network: "
                f"activation={self.activation!r} is not differentiable. Use "
                "activation='tanh' or fil_accounting=False."
            )
        return sizes

    def fit(self, X, y, coefs_init=None, intercepts_init=None):
        """Train with DP-SGD and account every example's exposure.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Training data, the private features. A scipy sparse matrix (the
            output of :class:`~sklearn.preprocessing.OneHotEncoder`) is
            trained on NumPy without a dense copy, a batch at a time.
        y : array-like of shape (n_samples,)
            Class labels.
        coefs_init : list of array-like, default=None
            Initial weights of each layer, ``(n_in, n_out)``, where the last
            layer has one output for two classes and one per class otherwise.
            None draws them as described in the Notes. An initialisation that
            does not depend on the data costs no privacy.
        intercepts_init : list of array-like, default=None
            Initial biases of each layer; required with ``coefs_init`` and only
            with it.

        Returns
        -------
        self : object
            Fitted estimator.

        Warns
        -----
        UtilityWarning
            When the released network's training accuracy does not beat the
            majority rate by two binomial standard errors
            (:class:`~sklearn_fil.exceptions.UtilityWarning`). Computed from
            the private training rows; not part of :meth:`release`.
        """
        return fit_or_clear(
            self,
            self._fit,
            X,
            y,
            coefs_init,
            intercepts_init,
            private=(FITTED_PARAMS,),
        )

    def _compute_namespace(self, X):
        """Namespace of the training computation, from ``backend`` and X."""
        if self.backend == "cupy":
            return _backend.cupy_namespace()  # ImportError before any work
        if self.backend == "numpy":
            return np
        return _backend.get_namespace(X)

    def _validate_X(self, X, xp, **kwargs):
        """``validate_data`` in the input's namespace, then X moved to ``xp``.

        Input already in ``xp`` (under ``array_api_dispatch``) is validated
        where it lives; anything else is validated on the host, as NumPy, and
        then moved to ``xp``. A scipy sparse X stays a canonical CSR matrix
        on the host, densified a batch (or a block of rows) at a time.
        """
        X_xp = _backend.get_namespace(X)
        if X_xp is not np and X_xp is xp:
            return validate_data(self, X, dtype=xp.float64, **kwargs)
        if issparse(X) and xp is not np:
            raise ValueError(
                f"A scipy sparse X is trained on NumPy only, not with "
                f"backend={self.backend!r} on {xp.__name__}: pass X.toarray() "
                "(dense rows on the device), or backend='numpy'."
            )
        if X_xp is not np:
            X = _backend.to_numpy(X)
        with sklearn.config_context(array_api_dispatch=False):
            out = validate_data(
                self, X, dtype=np.float64, accept_sparse="csr", **kwargs
            )
        X, *rest = out if isinstance(out, tuple) else (out,)
        if issparse(X):
            X = as_csr(X)  # canonical: one stored value per entry
        elif xp is not np:
            X = _backend.asarray(X, xp)
        return (X, *rest) if rest else X

    @_fit_context(prefer_skip_nested_validation=True)
    def _fit(self, X, y, coefs_init=None, intercepts_init=None):
        record_fitted_params(self)
        self._check_relation()
        xp = self._compute_namespace(X)
        if _backend.namespace_of(y) is not np:
            y = _backend.to_numpy(y)  # the labels are encoded on the host
        check_target(y, "DPSGDClassifier")
        index = X.index.copy() if isinstance(X, pd.DataFrame) else None
        target_name = y.name if isinstance(y, pd.Series) and y.name is not None else "y"
        # C order: the kernels read examples as rows, and a column-major X
        # (a DataFrame's values) made a logistic fit 17x slower
        X, y = self._validate_X(X, xp, y=y, ensure_min_samples=2, order="C")
        y = _backend.to_numpy(y)
        check_classification_targets(y)
        n, d = X.shape
        sizes = self._check_settings(n)
        if self.fil_accounting:
            _check_squares_finite(X)
        # what the release reads from the data, and the guarantee assumes public
        assumed = []
        onehot_groups = self.onehot_groups
        # the groups are found and checked on the host, before any work
        host = X if issparse(X) or not onehot_groups else _backend.to_numpy(X)
        if isinstance(onehot_groups, str):  # "auto"
            onehot_groups = detect_onehot_groups(
                host, getattr(self, "feature_names_in_", None)
            )
            # the fit's groups, as release() publishes them (and attacks read)
            getattr(self, FITTED_PARAMS)["onehot_groups"] = onehot_groups
            assumed.append("onehot_groups")
        groups = onehot_columns(
            onehot_groups, getattr(self, "feature_names_in_", None), d
        )
        if groups:
            check_onehot_groups(list(groups.values()), host, names=list(groups))
        classes = label_set(y, self.classes, "DPSGDClassifier")
        if self.classes is None:
            assumed.append(LABEL_SET)
        # on the label set, not on y: a class without examples keeps its unit
        # (two classes still give one output)
        binarizer = LabelBinarizer().fit(classes)
        device = _device(X)
        if self.clipping == "gelu" and xp is not np:
            # Phi has no array API route in every namespace: fail before work.
            _backend.ndtr(_backend.zeros(1, xp, device), xp)
        Y = _backend.asarray(binarizer.transform(y).astype(np.float64), xp, device)
        widths = [d, *sizes, Y.shape[1]]
        init = _check_init(coefs_init, intercepts_init, widths)
        rng = noise_rng(self.random_state)
        net = self._init_network(widths, rng, xp, device, init)
        privacy = self._train(net, X, Y, rng, list(groups.values()), assumed)

        # The one copy of the weights back to the host (a no-op for NumPy).
        self.coefs_ = [_backend.to_numpy(W) for W in net.coefs]
        self.intercepts_ = [_backend.to_numpy(b) for b in net.intercepts]
        self.classes_ = classes
        names = list(getattr(self, "feature_names_in_", [f"x{j}" for j in range(d)]))
        attribute_fil = self._attribute_columns(privacy, names, groups, target_name)
        self.privacy_report_ = privacy_report_frame(
            privacy["fil"],
            privacy["dfil"],
            privacy["mse_bound"],
            attribute_fil,
            index,
            epsilon=privacy["epsilon"],
            grad_norm=privacy["grad_norm"],
            loss=_backend.to_numpy(privacy["loss"]),
        )
        # FIL over all examples: sqrt of the trace of the Fisher information
        # about the attribute of every example (the sum of the report's
        # squared column), an upper bound on the GLMs' spectral norm
        self.attribute_fil_ = pd.Series(
            {name: float(np.sqrt(np.sum(v * v))) for name, v in attribute_fil.items()},
            name="fil",
            dtype=np.float64,
        )
        self.dataset_fil_ = float(np.sqrt(np.sum(privacy["fil"] ** 2)))
        self.guarantee_ = privacy["guarantee"]
        self._check_utility(privacy["predicted"], y, d)
        return self

    def _check_utility(self, predicted, y, d):
        """Warn when the release is no better than the majority (``fit_quality``).

        The released network's accuracy on the training rows, unweighted,
        from the index of the class it predicts for each (``predicted``, from
        the full pass of the report's loss column, not a second one; ``d``
        features).
        """
        best = _backend.to_numpy(predicted)
        score = float(np.mean(self.classes_[best] == y))
        quality = fit_quality(score, y, d, classifier=True)
        remedy = (
            "raise target_epsilon (or lower noise_multiplier), train longer or "
            "use more data"
        )
        # the caller of fit: _check_utility, _fit, its wrappers, fit
        warn_if_useless(quality, type(self).__name__, remedy, 6)

    @staticmethod
    def _attribute_columns(privacy, names, groups, target_name):
        """``{name: per-example FIL}`` in the GLMs' order: features outside
        the groups, each group at its first column, then the label."""
        columns = {}
        attr, group_fil = privacy["attribute_fil"], privacy["group_fil"]
        first = {min(cols): g for g, cols in enumerate(groups.values())}
        in_group = {j for cols in groups.values() for j in cols}
        group_names = list(groups)
        if attr is not None:
            for j, name in enumerate(names):
                if j in first:
                    g = first[j]
                    columns[str(group_names[g])] = group_fil[:, g]
                elif j not in in_group:
                    columns[str(name)] = attr[:, j]
        if privacy["label_fil"] is not None:
            columns[str(target_label(target_name, names))] = privacy["label_fil"]
        return columns

    def _init_network(self, widths, rng, xp=np, device=None, init=None):
        """The network at ``init``, or else zeros for logistic regression and
        Glorot uniform for an MLP (drawn on the host by ``rng``), on ``xp``."""
        if init is None:
            init = ([], [])
            for fan_in, fan_out in itertools.pairwise(widths):
                if len(widths) > 2:
                    bound = np.sqrt(6.0 / (fan_in + fan_out))
                    init[0].append(rng.uniform(-bound, bound, size=(fan_in, fan_out)))
                    init[1].append(rng.uniform(-bound, bound, size=fan_out))
                else:
                    init[0].append(np.zeros((fan_in, fan_out)))
                    init[1].append(np.zeros(fan_out))
        coefs = [_backend.asarray(W, xp, device) for W in init[0]]
        intercepts = [_backend.asarray(b, xp, device) for b in init[1]]
        return Network(coefs, intercepts, self.activation, xp=xp)

    def _plan(self, n):
        """The public constants of the run (see :class:`_Plan`)."""
        sigma = float(self.noise_multiplier)
        replace_one = self.neighboring_relation == "replace_one"
        # The sampling rate, the step count and the divisor are public: from
        # n under replace-one (n public), from public_n_samples under
        # add/remove, never from the realised n there.
        n_public = n if replace_one else int(self.public_n_samples)
        sampler = BatchSampler(n, n_public, self.batch_size, self.sampling == "poisson")
        total_steps = sampler.steps_per_epoch * self.max_iter
        if total_steps > _MAX_STEPS:
            raise ValueError(
                f"The run would take {total_steps} steps ({self.max_iter} "
                f"epochs of round({n_public} / batch_size={self.batch_size})); "
                f"at most {_MAX_STEPS} are allowed. Raise batch_size (DP-SGD "
                "also trades privacy for accuracy better with large batches) "
                "or lower max_iter."
            )
        plan = _Plan(
            sampler=sampler,
            total_steps=total_steps,
            sigma=sigma,
            C=float(self.max_grad_norm),
            # s: the largest clipped norm in units of C (the per-example bound)
            sensitivity=float(
                gelu_clip_max_norm(1.0) if self.clipping == "gelu" else 1.0
            ),
            # from public values only: n is private under add/remove
            delta=check_delta(self.delta, n_public),
            private=sigma > 0 and self.clipping is not None,
            replace_one=replace_one,
        )
        if self.target_epsilon is None:
            return plan
        # the noise whose reported epsilon is the target: the same sampling,
        # steps, sensitivity, relation, accountant and delta as epsilon_
        run = _composition(plan, self.max_iter, self.neighboring_relation)
        del run["noise_multiplier"]
        run.update(delta=plan.delta, accountant=self.accountant)
        # the largest noise allowed must reach the target (a cheap check: the
        # accountants are fast at large noise), else no calibration can
        largest = _NOISE_RANGE[1]
        floor = dpsgd_epsilon(noise_multiplier=largest, **run)
        if floor > self.target_epsilon:
            raise ValueError(
                f"target_epsilon={self.target_epsilon!r} is below epsilon="
                f"{floor:.3g}, what noise_multiplier={largest:g} (the largest "
                f"allowed) gives at delta={plan.delta:g} over {run['steps']} "
                "mechanisms. Raise target_epsilon or delta, or take fewer steps "
                "(max_iter)."
            )
        sigma = dpsgd_noise_multiplier(target_epsilon=float(self.target_epsilon), **run)
        return dataclasses.replace(plan, sigma=sigma, private=True)

    def _fil_accumulator(self, plan, n, d, xp, device, groups=()):
        """The FIL accumulator of the run, or None without FIL accounting."""
        if not (plan.private and self.fil_accounting):
            return None
        kappa = 1.0
        if plan.sampler.poisson:
            # kappa compares the step with and without the example (its
            # Fisher information is that of the sampled branch of the
            # mixture), a distance of s C whatever the relation of epsilon_.
            kappa = fil_subsampling_factor(
                noise_multiplier=plan.sigma,
                sample_rate=plan.sampler.q,
                sensitivity=plan.sensitivity,
                steps=plan.total_steps,
                n_samples=n,
            )
        sigma_C = plan.sigma * plan.C
        return FILAccumulator(
            n,
            d,
            scale=float(kappa) / sigma_C / sigma_C,
            fil_coordinates=self.fil_coordinates,
            private_label=self.private_label,
            xp=xp,
            device=device,
            groups=groups,
        )

    def _per_instance_accountant(self, plan, n):
        """Host per-instance accountant (Poisson sampling only), or None."""
        if not (plan.private and plan.sampler.poisson and self.per_instance_accounting):
            return None
        return PerInstanceAccountant(
            n,
            noise_multiplier=plan.sigma,
            sample_rate=plan.sampler.q,
            sensitivity=plan.sensitivity,
            precision=self.norm_precision,
            orders=_per_instance_orders(),
        )

    def _train(self, net, X, Y, rng, groups=(), assumed=()):
        """Run DP-SGD on ``net`` in place; returns the privacy accounting.

        ``assumed``: what else the guarantee assumes public (see
        :func:`_dp_guarantee`).

        The random numbers are drawn in the order described in
        :mod:`sklearn_fil.neural._training`. The result has the final
        ``"loss"`` of every example.
        """
        xp, device = net.xp, _device(X)
        n, d = X.shape
        plan = self._plan(n)
        fil = self._fil_accumulator(plan, n, d, xp, device, groups)
        norms = NormAccountant(self._per_instance_accountant(plan, n), xp)
        if norms.accountant is None:
            norms.defer(net, n, device)
        else:
            norms.refresh(self._full_pass_norms(net, X, Y))
        optimiser = NoisySGD(
            net,
            noise_multiplier=plan.sigma,
            max_grad_norm=plan.C,
            divisor=plan.sampler.divisor,
            learning_rate=float(self.learning_rate),
            momentum=float(self.momentum),
            alpha=float(self.alpha),
            device=device,
            rng=rng,
        )
        try:
            recorder = self._epochs(net, X, Y, rng, plan, optimiser, fil, norms)
            _check_finite_weights(net)
            norms.finish(
                lambda net0, rows: self._full_pass_norms(net0, X, Y, rows), device
            )
            loss, predicted = self._full_pass_losses(net, X, Y)
        finally:
            optimiser.detach(net)
        self.n_iter_ = self.max_iter
        self.t_ = plan.total_steps
        self.noise_multiplier_ = plan.sigma
        self.recorded_steps_ = recorder.records
        privacy = self._privacy(plan, fil, norms, Y.shape[1], assumed)
        return {**privacy, "loss": loss, "predicted": predicted}

    def _epochs(self, net, X, Y, rng, plan, optimiser, fil, norms):
        """The steps of every epoch; returns the :class:`StepRecorder`."""
        xp, device = net.xp, _device(X)
        n = X.shape[0]
        sampler, C = plan.sampler, plan.C
        recorder = StepRecorder(self.record_steps)
        finite = FiniteCheck(xp)
        # binary logistic regression: one kernel pass a step
        fast = None
        if self._fast_linear and BinaryLinearSteps.applies(net, X, Y):
            fast = BinaryLinearSteps(net, X, Y, C, self.clipping, optimiser.grads)
        t = 0
        for epoch in range(1, self.max_iter + 1):
            if self.norm_refresh and epoch > 1 and (epoch - 1) % self.norm_refresh == 0:
                norms.refresh(self._full_pass_norms(net, X, Y))
            for idx in sampler.epoch(rng):
                t += 1
                grads = new_norms = None
                if idx.size:
                    rows = _backend.Rows(idx, n, xp, device)
                    batch = None
                    if fast is not None:
                        batch = fast(idx, fil is not None, bool(fil and fil.groups))
                    if batch is None:
                        batch = clipped_batch(
                            net, _take(X, rows), rows.take(Y), C, self.clipping, finite
                        )
                        grads = net.weighted_sum(
                            batch.acts, batch.deltas, batch.c, out=optimiser.grads
                        )
                    else:
                        grads = optimiser.grads
                    new_norms = xp.minimum(batch.c * batch.norms / C, plan.sensitivity)
                    norms.update(rows, new_norms)
                    if fil is not None:
                        fil.add(net, rows, batch, rng)
                norms.step(idx, new_norms)
                recorder.before_step(t, idx, sampler.divisor, net)
                recorder.after_step(optimiser.step(net, grads))
            finite.end_epoch()
            norms.end_epoch()
            if self.verbose:
                print(
                    f"DPSGDClassifier: epoch {epoch}/{self.max_iter}, {t} steps",
                    file=sys.stderr,
                )
        return recorder

    def _privacy(self, plan, fil, norms, n_outputs, assumed=()):
        """The guarantee and the per-example columns of the privacy report."""
        grad_norm = _backend.to_numpy(norms.norms)
        n = grad_norm.shape[0]
        nan = np.full(n, np.nan)
        out = {"fil": nan, "dfil": nan, "mse_bound": nan, "grad_norm": grad_norm}
        out.update(attribute_fil=None, group_fil=None, label_fil=None)
        if not plan.private:
            reason = _NO_NOISE_MSG if plan.sigma == 0 else _NO_CLIP_MSG
            guarantee = Guarantee.none(reason, mechanism=_MECHANISM)
            return {**out, "epsilon": np.full(n, np.inf), "guarantee": guarantee}
        guarantee = _dp_guarantee(
            plan,
            self.accountant,
            self.neighboring_relation,
            self.max_iter,
            target=self.target_epsilon,
            assumed=assumed,
        )
        if fil is not None:
            out.update(fil.result(n_outputs))
            _check_finite_fil(out)
        if norms.accountant is None:
            epsilon = np.full(n, guarantee.epsilon)
        else:
            # The per-instance RDP and the add/remove RDP epsilon of the whole
            # run (same q and steps) both bound the loss of adding or removing
            # one example, so their minimum does too.
            run = _composition(plan, self.max_iter, "add_remove")
            cap = dpsgd_epsilon(**run, delta=plan.delta, accountant="rdp")
            epsilon = np.minimum(norms.accountant.epsilon(plan.delta), cap)
        return {**out, "epsilon": epsilon, "guarantee": guarantee}

    @staticmethod
    def _full_pass_losses(net, X, Y):
        """Every example's loss and the index of its most probable class.

        On blocks of :data:`_FULL_PASS_ROWS` rows, those of :meth:`_proba`:
        the classes are :meth:`predict`'s, for the utility check.
        """
        xp = net.xp
        losses, predicted = [], []
        for block in _blocks(X.shape[0]):
            logits = net.forward(_dense(X, block))[1]
            losses.append(net.loss(logits, Y[block, ...]))
            predicted.append(xp.argmax(_class_proba(net, logits), axis=1))
        if len(losses) == 1:
            return losses[0], predicted[0]
        return _backend.concat(losses, xp), _backend.concat(predicted, xp)

    def _full_pass_norms(self, net, X, Y, rows=None):
        """Clipped gradient norms in units of ``C``, of every example or of ``rows``.

        Computed on blocks of :data:`_FULL_PASS_ROWS` rows, so that the
        activations of a wide network never take ``n x width`` memory.
        ``rows``: host indices of the examples (None: all, in order).
        """
        C = float(self.max_grad_norm)
        parts = []
        for block in _blocks(X.shape[0] if rows is None else rows.size):
            if rows is None:
                acts, logits = net.forward(_dense(X, block))
                Yb = Y[block, ...]
            else:
                part = _backend.Rows(rows[block], X.shape[0], net.xp, _device(X))
                acts, logits = net.forward(_take(X, part))
                Yb = part.take(Y)
            g_norm = net.grad_norms(acts, net.backward(acts, logits, Yb))
            check_finite_norms(g_norm, net.xp)
            c, _ = clip_factor(g_norm, C, self.clipping, net.xp)
            parts.append(c * g_norm / C)
        return parts[0] if len(parts) == 1 else _backend.concat(parts, net.xp)

    def _network(self, xp=np, device=None):
        check_is_fitted(self)
        if xp is np:
            return Network(self.coefs_, self.intercepts_, self.activation)
        return Network(
            [_backend.asarray(W, xp, device) for W in self.coefs_],
            [_backend.asarray(b, xp, device) for b in self.intercepts_],
            self.activation,
            xp=xp,
        )

    def predict_proba(self, X):
        """Class probabilities of the released model.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Samples: host data, or arrays of another namespace under
            ``sklearn.config_context(array_api_dispatch=True)``, which are
            computed on where they live (the weights are sent there).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class, in the order of ``classes_``, in the
            namespace of ``X``.
        """
        check_is_fitted(self)
        xp = _backend.get_namespace(X)
        return self._proba(self._validate_X(X, xp, reset=False), xp)

    def _proba(self, X, xp):
        """:meth:`predict_proba` of validated rows in the namespace ``xp``."""
        net = self._network(xp, _device(X))
        # by blocks of rows: a sparse X is densified one block at a time
        logits = [net.forward(_dense(X, block))[1] for block in _blocks(X.shape[0])]
        return _class_proba(
            net, logits[0] if len(logits) == 1 else _backend.concat(logits, xp)
        )

    def predict(self, X):
        """Predict class labels with the released model.

        Parameters
        ----------
        X : {array-like, sparse matrix, DataFrame} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels; in the namespace of ``X`` when the labels are
            numbers, else (strings, objects) a host NumPy array.
        """
        proba = self.predict_proba(X)  # checks that the model is fitted
        xp = _backend.namespace_of(proba)
        if xp is np:
            return self.classes_[np.argmax(proba, axis=1)]
        best = xp.argmax(proba, axis=1)
        if self.classes_.dtype.kind not in "biuf":
            return self.classes_[_backend.to_numpy(best)]
        classes = _backend.asarray(self.classes_, xp, _backend.device(proba))
        return xp.take(classes, best, axis=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # scipy sparse X is trained a densified batch at a time (see fit)
        tags.input_tags.sparse = True
        return tags

    def release(self):
        """A copy holding only what may be published.

        Returns
        -------
        released : DPSGDClassifier
            The released weights, ``classes_``, the feature metadata, the
            constructor parameters of the fit (not any set later with
            ``set_params``; with ``onehot_groups="auto"``, the groups found)
            except ``random_state``, the step counts ``n_iter_`` and ``t_``,
            ``noise_multiplier_`` and ``guarantee_``; no privacy report. Each
            field but the weights is a public value or declared public in
            ``guarantee_.public`` (the label set without ``classes``, the
            one-hot layout found by ``"auto"``): neighbouring data sets give
            the same fields.
        """
        return released_copy(self, _PUBLIC)


def _check_init(coefs_init, intercepts_init, widths):
    """Validated float64 copies of a user initialisation, or None."""
    if coefs_init is None and intercepts_init is None:
        return None
    if coefs_init is None or intercepts_init is None:
        raise ValueError("coefs_init and intercepts_init must be given together.")
    shapes = list(itertools.pairwise(widths))
    if len(coefs_init) != len(shapes) or len(intercepts_init) != len(shapes):
        raise ValueError(
            f"coefs_init and intercepts_init need {len(shapes)} layers; got "
            f"{len(coefs_init)} and {len(intercepts_init)}."
        )
    coefs, intercepts = [], []
    for layer, (W, b, shape) in enumerate(
        zip(coefs_init, intercepts_init, shapes, strict=True)
    ):
        W = np.array(W, dtype=np.float64)  # copies: training never edits the input
        b = np.array(b, dtype=np.float64)
        if W.shape != shape or b.shape != shape[1:]:
            raise ValueError(
                f"Layer {layer} of the initialisation needs weights of shape "
                f"{shape} and biases of shape {shape[1:]}; got {W.shape} and "
                f"{b.shape}."
            )
        if not (np.isfinite(W).all() and np.isfinite(b).all()):
            raise ValueError(f"Layer {layer} of the initialisation is not finite.")
        coefs.append(W)
        intercepts.append(b)
    return coefs, intercepts


def _class_proba(net, logits):
    """Probabilities of every class, ``(n, n_classes)``, from ``net``'s logits."""
    p = net.proba(logits)
    if not net.binary:
        return p
    if net.xp is np:
        return np.hstack([1.0 - p, p])
    return _backend.concat([1.0 - p, p], net.xp, axis=1)


def _device(X):
    """Device of the training data; a scipy sparse matrix lives on the host."""
    return "cpu" if issparse(X) else _backend.device(X)


def _blocks(n):
    """Slices of :data:`_FULL_PASS_ROWS` rows that cover ``0..n-1``."""
    return [
        slice(start, min(start + _FULL_PASS_ROWS, n))
        for start in range(0, n, _FULL_PASS_ROWS)
    ]


def _dense(X, rows):
    """``X[rows]`` (a slice or host indices) as dense rows."""
    return X[rows].toarray() if issparse(X) else X[rows, ...]


def _take(X, rows):
    """``X[rows]`` (a :class:`_backend.Rows`) as dense rows."""
    return X[rows.indices].toarray() if issparse(X) else rows.take(X)


def _check_squares_finite(X):
    """Refuse entries whose squares overflow the Fisher information's sums.

    As the GLMs' check of their Gram: the FIL of an example sums products of
    its entries (a row of 1e200 gave NaN columns). Training alone clips such
    rows correctly, so ``fil_accounting=False`` takes them.
    """
    if issparse(X):
        high, low = X.max(), X.min()
    else:
        xp = _backend.namespace_of(X)
        high, low = xp.max(X), xp.min(X)
    largest = max(abs(float(high)), abs(float(low)))
    remedy = ", or set fil_accounting=False."
    check_squares_finite(largest, X.shape, "the Fisher information loss", remedy)


def _check_finite_fil(result):
    """Raise unless every FIL column of ``result`` is a number.

    ``mse_bound`` is ``1 / dfil^2``, infinite for an example never sampled;
    the others must be finite. A report of NaN beside an epsilon would look
    like an accounting it is not.
    """
    columns = {key: result[key] for key in ("fil", "dfil", "mse_bound")}
    for key in ("attribute_fil", "group_fil", "label_fil"):
        if result[key] is not None:
            columns[key] = result[key]
    for key, values in columns.items():
        bad = np.isnan(values) if key == "mse_bound" else ~np.isfinite(values)
        if bad.any():
            rows = np.flatnonzero(bad.reshape(bad.shape[0], -1).any(axis=1))
            raise ValueError(
                f"The Fisher information loss ({key}) of {rows.size} examples "
                f"is not finite (rows {rows[:5].tolist()}): their features or "
                "gradients are too large for its sums in float64. Rescale the "
                "features (e.g. with StandardScaler), or set fil_accounting=False."
            )


def _check_finite_weights(net):
    """Raise unless every trained weight of ``net`` is finite."""
    xp = net.xp
    if not all(bool(xp.all(xp.isfinite(a))) for a in (*net.coefs, *net.intercepts)):
        raise ValueError(
            "The trained weights are not finite: the steps diverged. Lower "
            "learning_rate, or rescale the features (e.g. with StandardScaler)."
        )
