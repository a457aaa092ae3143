"""Array namespaces: every decision about where arrays live and compute.

NumPy arrays always compute with NumPy itself (the module ``numpy``, not a
wrapper), so the NumPy and numba code paths are unchanged by this module.
Other arrays compute in their array-API namespace, from ``array-api-compat``,
when scikit-learn's ``array_api_dispatch`` is on (scikit-learn's rule: the
input decides). CuPy and ``array-api-compat`` are imported lazily, only here.
Operations the array API standard lacks (:func:`ndtr`, :class:`Rows`) have one
helper each, naming its route per namespace.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np
import scipy.special
import sklearn

GPU_INSTALL = "pip install sklearn-fil[gpu]"


def _compat():
    try:
        import array_api_compat
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "Arrays other than NumPy's need array-api-compat: "
            "pip install array-api-compat (or pip install sklearn-fil[gpu])."
        ) from exc
    return array_api_compat


def _is_numpy_array(x):
    return isinstance(x, np.ndarray)


def _maybe_foreign_array(x):
    """Whether ``x`` may be an array of another library (then ask compat)."""
    return not _is_numpy_array(x) and (
        hasattr(x, "__array_namespace__") or hasattr(x, "__dlpack__")
    )


def namespace_of(*arrays):
    """Namespace of the arrays themselves, whatever the configuration.

    ``numpy`` for NumPy arrays and for objects that are not array-API arrays
    (lists, DataFrames, scalars, None), else their ``array-api-compat`` one.
    """
    others = [a for a in arrays if _maybe_foreign_array(a)]
    if not others:  # no need for array-api-compat
        return np
    compat = _compat()
    others = [a for a in others if compat.is_array_api_obj(a)]
    if not others or all(compat.is_numpy_array(a) for a in others):
        return np
    return compat.array_namespace(*others)


def get_namespace(*arrays):
    """Namespace to compute in, by scikit-learn's array-API rule.

    NumPy unless ``sklearn.get_config()["array_api_dispatch"]`` is on; then
    :func:`namespace_of` the arrays.
    """
    if not sklearn.get_config()["array_api_dispatch"]:
        return np
    return namespace_of(*arrays)


def is_numpy(xp):
    """Whether ``xp`` is NumPy (the module or its array-API wrapper)."""
    return xp is np or _compat().is_numpy_namespace(xp)


def is_cupy(xp):
    """Whether ``xp`` is CuPy's namespace."""
    return xp is not np and _compat().is_cupy_namespace(xp)


def cupy_namespace():
    """``array_api_compat.cupy``; ImportError naming the install command."""
    try:
        import cupy  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"backend='cupy' needs CuPy and a CUDA GPU: {GPU_INSTALL}"
        ) from exc
    _compat()
    import array_api_compat.cupy

    return array_api_compat.cupy


def device(x):
    """Device of ``x``; ``"cpu"`` for NumPy arrays."""
    if _is_numpy_array(x):
        return "cpu"
    return _compat().device(x)


def to_numpy(x):
    """``x`` as a host NumPy array: a copy, or ``x`` itself for NumPy input."""
    if _is_numpy_array(x):
        return x
    compat = _compat()
    if compat.is_cupy_array(x):
        return x.get()
    if compat.is_torch_array(x):
        return x.cpu().numpy()
    xp = compat.array_namespace(x)
    if xp.__name__ == "array_api_strict":  # its test devices refuse np.asarray
        x = xp.asarray(x, device=xp.Device("CPU_DEVICE"))
    return np.asarray(x)


def asarray(x, xp, device=None):
    """``x`` in namespace ``xp`` on ``device`` (NumPy: ``np.asarray``)."""
    if xp is np:
        return np.asarray(x)
    return xp.asarray(x, device=device)


def zeros(shape, xp, device=None):
    """float64 zeros of namespace ``xp`` on ``device``."""
    if xp is np:
        return np.zeros(shape)
    return xp.zeros(shape, dtype=xp.float64, device=device)


def concat(arrays, xp, axis=0):
    """Concatenation along ``axis`` (``np.concatenate`` for NumPy)."""
    if xp is np:
        return np.concatenate(arrays, axis=axis)
    return xp.concat(arrays, axis=axis)


def ndtr(x, xp):
    """Standard normal distribution function ``Phi(x)``, exactly, in ``xp``.

    The array API standard has no ``erf``; the routes are:

    * NumPy: :func:`scipy.special.ndtr`;
    * CuPy: ``cupyx.scipy.special.ndtr`` (on the GPU);
    * any other namespace: :func:`scipy.special.ndtr` through SciPy's own
      array-API dispatch, which needs ``SCIPY_ARRAY_API=1`` set before SciPy
      is imported (as scikit-learn's ``array_api_dispatch`` requires); SciPy
      computes natively (PyTorch, JAX) or through NumPy. Otherwise a
      ValueError: Phi is never approximated.
    """
    if xp is np:
        return scipy.special.ndtr(x)
    if is_cupy(xp):
        from cupyx.scipy.special import ndtr as cupy_ndtr

        return cupy_ndtr(x)
    message = (
        "The normal distribution function (needed by clipping='gelu') has no "
        f"exact route for arrays of {xp.__name__} on device {device(x)}: the "
        "array API standard has no erf, and SciPy's array API support (set "
        "SCIPY_ARRAY_API=1 before importing SciPy) is off or cannot reach the "
        "device. Use clipping='hard', NumPy or CuPy arrays."
    )
    try:
        out = scipy.special.ndtr(x)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise ValueError(message) from exc
    if type(out) is not type(x):
        raise ValueError(message)
    return out


class Rows:
    """Rows of a length-``n`` axis chosen by host indices, for one namespace.

    Gathers with ``take`` and assigns or adds with integer indexing (NumPy,
    CuPy). A namespace whose ``__setitem__`` follows the array API standard,
    which has no integer-array keys, gets a boolean mask of the rows and the
    values sorted by row instead (an ``n``-length mask sent to the device per
    use).

    Parameters
    ----------
    indices : ndarray of int of shape (m,)
        Distinct row indices, on the host.
    n : int
        Length of the axis.
    xp : module
        Namespace of the arrays the rows are applied to.
    device : object, default=None
        Their device.
    """

    def __init__(self, indices, n, xp, device=None):
        self.indices = indices
        self._n = n
        self._xp = xp
        self._device = device
        self._on_device = asarray(indices, xp, device)
        self._fancy = xp is np or is_numpy(xp) or is_cupy(xp)
        self._mask = self._order = None

    def take(self, x):
        """The rows of ``x``."""
        if self._xp is np:
            return x[self.indices]
        return self._xp.take(x, self._on_device, axis=0)

    def _masked(self, values):
        if self._mask is None:
            mask = np.zeros(self._n, dtype=bool)
            mask[self.indices] = True
            self._mask = asarray(mask, self._xp, self._device)
            if np.any(np.diff(self.indices) < 0):
                order = np.argsort(self.indices, kind="stable")
                self._order = asarray(order, self._xp, self._device)
        if self._order is not None:
            values = self._xp.take(values, self._order, axis=0)
        return self._mask, values

    def set(self, target, values):
        """``target[rows] = values``, in place."""
        if self._fancy:
            target[self._on_device] = values
        else:
            mask, values = self._masked(values)
            target[mask] = values

    def add(self, target, values):
        """``target[rows] += values``, in place."""
        if self._fancy:
            target[self._on_device] += values
        else:
            mask, values = self._masked(values)
            target[mask] = target[mask] + values
