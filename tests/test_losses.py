"""Loss families: one object per family, looked up once by name."""

import numpy as np
import pytest

from sklearn_fil._losses import LOSSES, _Family, get_family
from sklearn_fil.fisher import fisher_information_loss


def test_lookup_by_name_and_passthrough():
    for name, family in LOSSES.items():
        assert get_family(name) is family
        assert get_family(family) is family
        assert family.name == name
    assert get_family("logistic").is_classifier
    assert not get_family("squared").is_classifier
    assert get_family("squared").constant_curvature
    assert not get_family("logistic").constant_curvature


@pytest.mark.parametrize("name", ["poisson", "Logistic", None, 3])
def test_unknown_family_is_an_error(name):
    with pytest.raises(ValueError, match="loss must be one of"):
        get_family(name)
    X = np.eye(3)
    with pytest.raises(ValueError, match="loss must be one of"):
        fisher_information_loss(X, np.zeros(3), np.zeros(3), loss=name)


def test_a_family_without_closed_forms_refuses_them():
    class _Bare(_Family):
        name = "bare"

    with pytest.raises(NotImplementedError, match="bare"):
        _Bare.mean_increment_factors(np.zeros(2), np.ones(2))
    with pytest.raises(NotImplementedError, match="bare"):
        _Bare.residual_roots(np.zeros(2), np.zeros(2))
