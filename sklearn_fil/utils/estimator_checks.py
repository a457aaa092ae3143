"""Checks that every private estimator and attack of sklearn-fil keeps its contract.

scikit-learn's :func:`~sklearn.utils.estimator_checks.check_estimator`
checks the scikit-learn API; :func:`private_estimator_checks` check what a
private estimator adds to it, :func:`attack_checks` the contract of an attack
(one check a clause). Third-party code that keeps them can run them too.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import copy
import dataclasses
import inspect
from numbers import Real

import joblib
import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError

from sklearn_fil.utils._pipeline import release
from sklearn_fil.utils._weights import WEIGHT_ATTRIBUTES, flatten_weights

__all__ = [
    "assert_same_release",
    "attack_checks",
    "check_attack_failed_fit_leaves_no_state",
    "check_attack_leaves_model_unchanged",
    "check_attack_on_released_model",
    "check_attack_refuses_unfitted_model",
    "check_attack_results_leave_attack_unchanged",
    "check_attack_uses_fitted_recipe",
    "check_failed_fit_leaves_no_state",
    "check_noise_seeded_and_fresh",
    "check_privacy_report_schema",
    "check_release_is_publishable",
    "check_release_same_on_neighbours",
    "expected_failed_checks",
    "private_estimator_checks",
]

_FEATURES = ["age", "income", "height"]
_TARGET = "label"


_ESTIMATOR_CHECK = """
    Parameters
    ----------
    estimator : estimator instance
        An unfitted private estimator; it is cloned, never modified.

    Raises
    ------
    AssertionError
        When the estimator breaks the contract.
    """
_ATTACK_CHECK = """
    Parameters
    ----------
    attack : estimator instance
        An unfitted attack whose ``model`` is a fitted private estimator.
    *fit_args, **fit_params
        The arguments of the attack's ``fit``, ``X`` first.

    Raises
    ------
    AssertionError
        When the attack breaks the contract.
    """


def _documented(section):
    """Append the Parameters and Raises ``section`` shared by a kind of check."""

    def decorate(check):
        check.__doc__ = check.__doc__.rstrip() + "\n" + section
        return check

    return decorate


def _data(n_samples=40):
    """A small binary problem as a named DataFrame with a non-default index."""
    X, y = make_classification(
        n_samples=n_samples,
        n_features=len(_FEATURES),
        n_informative=2,
        n_redundant=0,
        random_state=0,
    )
    index = pd.Index(np.arange(100, 100 + n_samples), name="person")
    X = pd.DataFrame(
        X / np.linalg.norm(X, axis=1).max(), columns=_FEATURES, index=index
    )
    return X, pd.Series(y, name=_TARGET, index=index)


@_documented(_ESTIMATOR_CHECK)
def check_privacy_report_schema(estimator):
    """``privacy_report_``: index, column order, dtypes and basic identities.

    One row per training example, indexed like ``X``; columns ``fil``,
    ``dfil``, ``mse_bound``, then ``fil[<attribute>]`` in feature order (and
    ``fil[<target>]`` last among them when the label is private), then the
    estimator's extras; float64 throughout; ``fil >= dfil`` (the spectral
    norm bounds the root mean square) and ``mse_bound = 1 / dfil^2``.
    """
    X, y = _data()
    est = clone(estimator).set_params(random_state=0).fit(X, y)
    report = est.privacy_report_
    assert report.index.equals(X.index), "the report is not indexed like X"
    assert list(report.columns[:3]) == ["fil", "dfil", "mse_bound"], report.columns
    attribute_columns = [c for c in report.columns if c.startswith("fil[")]
    position = [report.columns.get_loc(c) for c in attribute_columns]
    assert position == list(range(3, 3 + len(position))), (
        f"the attribute columns do not follow mse_bound: {list(report.columns)}"
    )
    expected = [f"fil[{f}]" for f in _FEATURES if f"fil[{f}]" in attribute_columns]
    if est.get_params().get("private_label"):
        expected.append(f"fil[{_TARGET}]")
    assert attribute_columns[: len(expected)] == expected or not expected, (
        attribute_columns,
        expected,
    )
    assert all(dtype == np.float64 for dtype in report.dtypes), report.dtypes
    fil, dfil = report["fil"].to_numpy(), report["dfil"].to_numpy()
    assert np.all(fil >= dfil * (1 - 1e-9)), "fil < dfil for some example"
    with np.errstate(divide="ignore"):  # dfil = 0: an infinite bound
        np.testing.assert_allclose(report["mse_bound"], 1.0 / dfil**2, rtol=1e-12)
    if hasattr(est, "attribute_fil_"):
        names = [c[4:-1] for c in attribute_columns]
        assert list(est.attribute_fil_.index) == names
        assert est.dataset_fil_ >= est.attribute_fil_.max() * (1 - 1e-9)


@_documented(_ESTIMATOR_CHECK)
def check_release_is_publishable(estimator):
    """``release()``: public state only, and the parameters of the fit.

    The copy predicts as the fitted estimator, carries ``guarantee_``, has
    ``random_state=None`` and no attribute that holds one number per
    training example (the report, weights, histories), and it advertises
    the parameters the model was fitted with even after ``set_params``.
    """
    X, y = _data()
    est = clone(estimator).set_params(random_state=0).fit(X, y)
    fitted = est.get_params(deep=False)
    noise = next((k for k in ("sigma", "noise_multiplier") if k in fitted), None)
    if noise is not None:
        est.set_params(**{noise: 2.0 * fitted[noise] + 1.0})
    released = est.release()
    assert released.random_state is None
    params = released.get_params(deep=False)
    assert {k: v for k, v in params.items() if k != "random_state"} == {
        k: v for k, v in fitted.items() if k != "random_state"
    }
    np.testing.assert_array_equal(released.predict(X), est.predict(X))
    assert released.guarantee_ == est.guarantee_
    n = X.shape[0]
    for name, value in vars(released).items():
        assert not isinstance(value, pd.DataFrame | pd.Series), name
        rows = [
            np.shape(v)[:1] for v in (value if isinstance(value, list) else [value])
        ]
        assert (n,) not in rows or name == "classes_", (
            f"release() keeps {name}, which has one entry per training example"
        )
    assert not hasattr(released, "privacy_report_")


@_documented(_ESTIMATOR_CHECK)
def check_release_same_on_neighbours(estimator):
    """Neighbouring data sets give releases that differ only in the noise.

    Every field of ``release()`` but the weights must be protected by the
    noise or public, so fitting neighbours with the same seed gives the same
    fields, and weights of the same shapes. The neighbours are those of the
    estimator's relation: one example replaced (features and label), or,
    under ``neighboring_relation="add_remove"``, one removed. The replaced
    example is the only one of its class, so a label set read from the data
    would tell the two apart; a classifier is given the label set in
    advance through its ``classes`` parameter, when it has one and it is
    unset.
    """
    X, y = _data()
    y = pd.Series(np.zeros(len(y), dtype=int), index=y.index, name=y.name)
    y.iloc[0] = 1  # the only example of its class
    est = clone(estimator).set_params(random_state=0)
    params = est.get_params()
    if "classes" in params and params["classes"] is None:
        est.set_params(classes=[0, 1])
    if params.get("fit_intercept") and "penalize_intercept" in params:
        # one class left: a free intercept would have no minimiser
        est.set_params(penalize_intercept=True)
    if params.get("neighboring_relation") == "add_remove":
        X2, y2 = X.iloc[1:], y.iloc[1:]
    else:
        X2, y2 = X.copy(), y.copy()
        X2.iloc[0] = -0.5 * X.iloc[0]
        y2.iloc[0] = 0
    assert_same_release(clone(est).fit(X, y), clone(est).fit(X2, y2))


def _release_fields(released):
    """Every field of a release: the weights by their shapes (a network's
    layer by layer), the guarantee field by field."""
    weights = {name for names in WEIGHT_ATTRIBUTES for name in names}
    fields = {
        name: (
            value
            if name not in weights
            else [np.shape(w) for w in value]
            if isinstance(value, list)
            else np.shape(value)
        )
        for name, value in vars(released).items()
    }
    guarantee = released.guarantee_
    for field in dataclasses.fields(guarantee):
        fields[f"guarantee_.{field.name}"] = getattr(guarantee, field.name)
    return fields


def assert_same_release(a, b):
    """Assert that two fitted estimators' releases differ only in the noise.

    Every field of ``a.release()`` and ``b.release()`` is equal (by
    ``joblib.hash``) except the weights' values; the weights have the
    same shapes.

    Parameters
    ----------
    a, b : estimator
        Fitted private estimators, typically on neighbouring data sets with
        one seed.

    Raises
    ------
    AssertionError
        Naming the first field that tells the two apart.
    """
    a, b = _release_fields(a.release()), _release_fields(b.release())
    assert a.keys() == b.keys(), (a.keys(), b.keys())
    for name in a:
        assert joblib.hash(a[name]) == joblib.hash(b[name]), (
            f"release().{name} tells neighbouring data sets apart: "
            f"{a[name]!r} != {b[name]!r}"
        )


@_documented(_ESTIMATOR_CHECK)
def check_failed_fit_leaves_no_state(estimator):
    """A fit that raises leaves no fitted attribute, not even an earlier fit's."""
    X, y = _data()
    est = clone(estimator).set_params(random_state=0).fit(X, y)
    bad = X.copy()
    bad.iloc[3, 1] = np.nan
    try:
        est.fit(bad, y)
    except ValueError:
        pass
    else:  # pragma: no cover - reached only by a broken estimator
        raise AssertionError("fit accepted a NaN feature")
    left = [a for a in vars(est) if a.endswith("_") or a == "_fitted_params"]
    assert left == [], f"a failed fit left {left}"


@_documented(_ESTIMATOR_CHECK)
def check_noise_seeded_and_fresh(estimator):
    """A seed reproduces the released weights; ``random_state=None`` does not."""
    X, y = _data()
    a = flatten_weights(clone(estimator).set_params(random_state=3).fit(X, y))
    b = flatten_weights(clone(estimator).set_params(random_state=3).fit(X, y))
    np.testing.assert_array_equal(a, b)
    fresh = clone(estimator).set_params(random_state=None)
    c = flatten_weights(fresh.fit(X, y))
    d = flatten_weights(fresh.fit(X, y))
    assert np.all(c != d), "random_state=None drew the same noise twice"


def expected_failed_checks(estimator):
    """scikit-learn checks that ``estimator`` refuses by design, with the reason.

    For ``expected_failed_checks`` of scikit-learn's
    :func:`~sklearn.utils.estimator_checks.check_estimator` and
    :func:`~sklearn.utils.estimator_checks.parametrize_with_checks`.

    Parameters
    ----------
    estimator : estimator instance
        An estimator of sklearn-fil.

    Returns
    -------
    expected : dict of str to str
        The name of each refused check and why.

    Examples
    --------
    >>> from sklearn.utils.estimator_checks import check_estimator
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> from sklearn_fil.utils.estimator_checks import expected_failed_checks
    >>> est = OutputPerturbedLinearRegression()
    >>> sorted(expected_failed_checks(est))
    ['check_array_api_input', 'check_sample_weight_equivalence_on_dense_data',
     'check_sample_weight_equivalence_on_sparse_data']
    >>> _ = check_estimator(est, expected_failed_checks=expected_failed_checks(est))
    """
    params = estimator.get_params()
    # lam="auto" of OutputPerturbedLinearRegression is 0 (least squares) unless
    # data_norm and label_bound ask for a guarantee
    least_squares = params.get("lam") == "auto" and (
        params.get("label_bound", 0) is None or params.get("data_norm", 0) is None
    )
    if params.get("lam") != 0 and not least_squares:
        return {}
    singular = (
        "with lam=0 the Hessian is singular, so the minimiser and its FIL are "
        "not determined and fit raises instead of returning one of many "
        "minimisers"
    )
    few_examples = f"it fits 15 examples of 30 features: {singular}"
    return {
        "check_sample_weight_equivalence_on_dense_data": few_examples,
        "check_sample_weight_equivalence_on_sparse_data": few_examples,
        # run only when SCIPY_ARRAY_API=1
        "check_array_api_input": (
            "its data (make_classification) has redundant features, exact "
            f"linear combinations of others: {singular}"
        ),
    }


def private_estimator_checks(estimator):
    """Yield ``(estimator, check)`` pairs of every check of this module.

    Parameters
    ----------
    estimator : estimator instance
        An unfitted private estimator of sklearn-fil (or one that keeps the
        same contract), binary classifier or regressor.

    Yields
    ------
    estimator : estimator instance
        A clone of ``estimator``.
    check : callable
        A check; ``check(estimator)`` raises an ``AssertionError`` on failure.

    Examples
    --------
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> from sklearn_fil.utils.estimator_checks import private_estimator_checks
    >>> for est, check in private_estimator_checks(
    ...     OutputPerturbedLinearRegression(sigma=0.1, lam=1e-3)
    ... ):
    ...     check(est)
    """
    for check in (
        check_privacy_report_schema,
        check_release_is_publishable,
        check_release_same_on_neighbours,
        check_failed_fit_leaves_no_state,
        check_noise_seeded_and_fresh,
    ):
        yield clone(estimator), check


def _fitted_state(attack):
    """Every attribute ``fit`` set, the target model's reference excepted."""
    params = attack.get_params(deep=False)
    return {k: v for k, v in vars(attack).items() if k not in params and k != "model_"}


def _assert_same_fit(a, b, message):
    state_a, state_b = _fitted_state(a), _fitted_state(b)
    assert sorted(state_a) == sorted(state_b), (message, sorted(state_a))
    for name in state_a:
        assert joblib.hash(state_a[name]) == joblib.hash(state_b[name]), (
            f"{message}: {name} differs"
        )


def _with_model(attack, model):
    return clone(attack).set_params(model=model)


@_documented(_ATTACK_CHECK)
def check_attack_on_released_model(attack, *fit_args, **fit_params):
    """The attack learns the same from the model and from its ``release()``.

    For a :class:`~sklearn.pipeline.Pipeline` the release is its fitted
    prefix (public knowledge of the adversary) followed by the final step's
    ``release()``.
    """
    on_model = _with_model(attack, attack.model).fit(*fit_args, **fit_params)
    on_release = _with_model(attack, release(attack.model, public_prefix=True))
    on_release.fit(*fit_args, **fit_params)
    _assert_same_fit(on_model, on_release, "the fitted and the released model")


@_documented(_ATTACK_CHECK)
def check_attack_uses_fitted_recipe(attack, *fit_args, **fit_params):
    """Parameters set on the model after its fit do not reach the attack.

    Every real parameter of the model is tripled and every boolean flipped on
    a copy (without refitting it): the attack must read the recipe of the
    fit, which the released weights came from.
    """
    model = copy.deepcopy(attack.model)
    changed = {}
    for name, value in model.get_params(deep=False).items():
        if isinstance(value, bool):
            changed[name] = not value
        elif isinstance(value, Real) and name != "random_state":
            changed[name] = 3.0 * value + 1.0
    model.set_params(**changed)
    reference = _with_model(attack, attack.model).fit(*fit_args, **fit_params)
    after = _with_model(attack, model).fit(*fit_args, **fit_params)
    _assert_same_fit(reference, after, f"set_params({sorted(changed)}) after fit")


@_documented(_ATTACK_CHECK)
def check_attack_leaves_model_unchanged(attack, *fit_args, **fit_params):
    """Fitting the attack does not modify the target model."""
    model = attack.model
    before = joblib.hash(model)
    _with_model(attack, model).fit(*fit_args, **fit_params)
    assert joblib.hash(model) == before, "fitting the attack changed the model"


@_documented(_ATTACK_CHECK)
def check_attack_refuses_unfitted_model(attack, *fit_args, **fit_params):
    """An unfitted model raises ``NotFittedError`` and leaves no state."""
    unfitted = _with_model(attack, clone(attack.model))
    try:
        unfitted.fit(*fit_args, **fit_params)
    except NotFittedError:
        pass
    else:  # pragma: no cover - reached only by a broken attack
        raise AssertionError("the attack fitted against an unfitted model")
    assert _fitted_state(unfitted) == {}, sorted(_fitted_state(unfitted))


@_documented(_ATTACK_CHECK)
def check_attack_failed_fit_leaves_no_state(attack, *fit_args, **fit_params):
    """A failed ``fit`` clears the state of an earlier successful one.

    The failing fit gets the same arguments with a NaN in ``X``.
    """
    fitted = _with_model(attack, attack.model).fit(*fit_args, **fit_params)
    X = fit_args[0]
    bad = X.copy() if isinstance(X, pd.DataFrame) else np.array(X, dtype=float)
    if isinstance(bad, pd.DataFrame):
        bad.iloc[1, 0] = np.nan
    else:
        bad[1, 0] = np.nan
    try:
        fitted.fit(bad, *fit_args[1:], **fit_params)
    except ValueError:
        pass
    else:  # pragma: no cover - reached only by a broken attack
        raise AssertionError("the attack accepted a NaN in X")
    assert _fitted_state(fitted) == {}, (
        f"a failed fit left {sorted(_fitted_state(fitted))}"
    )


_RESULT_METHODS = (
    "decision_function",
    "predict",
    "transform",
    "score",
    "get_feature_names_out",
)


@_documented(_ATTACK_CHECK)
def check_attack_results_leave_attack_unchanged(attack, *fit_args, **fit_params):
    """No method called after ``fit`` changes the attack: fitted state is fit's.

    Each of ``decision_function``, ``predict``, ``transform``, ``score`` and
    ``get_feature_names_out`` the attack has is called with its required
    arguments, taken from the fit's (positionally from ``fit_args``, then by
    name from ``fit_params``); ``joblib.hash`` of ``vars(attack)`` must
    not change.
    """
    fitted = _with_model(attack, attack.model).fit(*fit_args, **fit_params)
    for name in _RESULT_METHODS:
        method = getattr(fitted, name, None)
        if method is None:
            continue
        required = [
            p.name
            for p in inspect.signature(method).parameters.values()
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]
        args = fit_args[: len(required)]
        kwargs = {key: fit_params[key] for key in required[len(args) :]}
        before = joblib.hash(vars(fitted))
        method(*args, **kwargs)
        assert joblib.hash(vars(fitted)) == before, f"{name} changed the attack"


def attack_checks(attack, *fit_args, **fit_params):
    """Yield ``(attack, check)`` pairs of every attack check of this module.

    Parameters
    ----------
    attack : estimator instance
        An unfitted attack whose ``model`` (its first parameter) is a fitted
        private estimator.
    *fit_args, **fit_params
        The arguments of the attack's ``fit``, ``X`` first; each check is
        called as ``check(attack, *fit_args, **fit_params)``.

    Yields
    ------
    attack : estimator instance
        A clone of ``attack`` with the same fitted ``model``.
    check : callable
        A check; it raises an ``AssertionError`` on failure.

    Examples
    --------
    >>> from sklearn.datasets import make_regression
    >>> from sklearn_fil import OutputPerturbedLinearRegression
    >>> from sklearn_fil.attacks import GLMReconstructionAttack
    >>> from sklearn_fil.utils.estimator_checks import attack_checks
    >>> X, y = make_regression(n_samples=30, n_features=3, random_state=0)
    >>> model = OutputPerturbedLinearRegression(lam=0.1, random_state=0).fit(X, y)
    >>> for attack, check in attack_checks(GLMReconstructionAttack(model), X, y):
    ...     check(attack, X, y)
    """
    for check in (
        check_attack_on_released_model,
        check_attack_uses_fitted_recipe,
        check_attack_leaves_model_unchanged,
        check_attack_refuses_unfitted_model,
        check_attack_failed_fit_leaves_no_state,
        check_attack_results_leave_attack_unchanged,
    ):
        yield _with_model(attack, attack.model), check
