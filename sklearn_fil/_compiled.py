"""The kernels a first report calls, compiled ahead of time when installing.

numba compiles a kernel on its first call: about 12 of the 15 s of a first
``sklearn-fil report`` without this module (``benchmarks/results/startup.md``).
``setup.py`` compiles the kernels of :data:`KERNELS` when the package is built
instead, with numba's AOT compiler (``numba.pycc``), for the building
machine's CPU, into the extension ``sklearn_fil._aot``. :func:`compiled` gives
a kernel's compiled twin only where

* the extension was built from the kernels' sources as they are, by this
  process's numba, llvmlite and Python, for this CPU (name and features: the
  rule numba's own cache follows) and with its optimisation settings, so that
  its machine code is the JIT's and its results the same, bit for bit
  (``tests/test_compiled.py`` compares them): a kernel edited since the build
  runs as the JIT compiles it;
* the arguments have the exported types: pycc's functions do not check them,
  and read an array of another dtype or layout wrongly;
* and the JIT is enabled (``NUMBA_DISABLE_JIT=1`` runs the kernels as Python);

elsewhere it gives the kernel itself, which compiles on its first call. A build
without a C and C++ compiler, or whose numba has no ``pycc``, leaves the
extension out and warns.

This module and the kernels' modules import neither scikit-learn, SciPy nor
pandas: ``setup.py`` loads them by path, without the package's dependencies.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import hashlib
import sys
from pathlib import Path

import llvmlite
import numba
import numpy as np
from numba._dispatcher import compute_fingerprint
from numba.core.registry import cpu_target
from numba.core.sigutils import normalize_signature

_PACKAGE = Path(__file__).parent
_A1, _A2, _I1 = "float64[::1]", "float64[:,::1]", "int64[::1]"
# module -> {kernel: numba signature of the calls a report makes}
KERNELS = {
    "sklearn_fil.fisher._kernels": {
        "per_example_fil_serial": (
            f"void({_A2},{_A1},{_A1},{_A1},{_A1},{_A1},{_A1},{_A1},float64,float64,"
            f"{_A1},{_A1},{_I1},{_I1},{_I1},{_A1},{_A1},{_A1},{_I1},int64,float64,"
            f"float64,{_A1},{_A1},{_A2})"
        ),
        "gradient_sums_serial": f"{_A2}({_A2},{_A1},{_A1},{_A1})",
        "top_eigenvalue": (
            f"float64({_A1},float64,{_A1},{_A1},float64,float64,{_A1},{_A1})"
        ),
    },
    "sklearn_fil.accounting._kernels": {
        "gaussian_epsilons": (
            f"void({_A1},float64,float64,float64,float64,{_A1},{_A2},boolean,{_A1})"
        ),
        "range_above": f"Tuple((int64,float64,float64))({_A1},float64)",
    },
    "sklearn_fil._moments": {
        "block_moments": f"Tuple((float64,{_A1},{_A1}))({_A2},{_A1},int64,int64,int64)",
    },
}


def build_tag():
    """An int64 naming what decides the JIT's machine code in this process:
    the kernels' sources and signatures, the compilers and their settings."""
    codegen = cpu_target.target_context.codegen()
    config = numba.config
    sources = [_PACKAGE.joinpath(*m.split(".")[1:]).with_suffix(".py") for m in KERNELS]
    parts = (
        [path.read_bytes() for path in sources],
        KERNELS,
        numba.__version__,
        llvmlite.__version__,
        sys.implementation.cache_tag,
        codegen.magic_tuple(),  # target triple, CPU name and features
        # LLVM's vectorisers reorder the fastmath kernels' sums
        (int(config.OPT), config.LOOP_VECTORIZE, config.SLP_VECTORIZE),
    )
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:15], 16)


@functools.cache
def _extension():
    """``sklearn_fil._aot`` where it applies to this process, else None."""
    if numba.config.DISABLE_JIT:
        return None
    try:
        from sklearn_fil import _aot
    except ImportError:
        return None
    try:
        tag = build_tag()
    except OSError:  # the kernels' sources are not installed: nothing to compare
        return None
    return _aot if _aot.build_tag() == tag else None


@functools.cache
def compiled(kernel):
    """``kernel`` (a numba dispatcher of :data:`KERNELS`), or its twin
    compiled ahead of time where that applies (module docstring)."""
    extension = _extension()
    if extension is None:
        return kernel
    func = kernel.py_func
    signature = KERNELS[func.__module__][func.__name__]
    return _Twin(kernel, getattr(extension, func.__name__), signature)


class _Twin:
    """Calls the compiled ``function`` with arguments of the exported types,
    else ``kernel``; the types of each argument fingerprint are checked once
    (a fingerprint leaves out an array's alignment and byte order)."""

    def __init__(self, kernel, function, signature):
        self.kernel, self.function = kernel, function
        self.argtypes = normalize_signature(signature)[0]
        self._exported = {}  # argument fingerprints -> whether of the exported types

    def __call__(self, *args):
        try:
            if not all(map(_behaved, args)):
                return self.kernel(*args)
            key = tuple(map(compute_fingerprint, args))
        except (TypeError, ValueError, NotImplementedError):
            return self.kernel(*args)
        exported = self._exported.get(key)
        if exported is None:
            exported = tuple(map(numba.typeof, args)) == self.argtypes
            self._exported[key] = exported
        return (self.function if exported else self.kernel)(*args)


def _behaved(value):
    """Not an array, or one aligned in native byte order."""
    return not isinstance(value, np.ndarray) or (
        value.flags.aligned and value.dtype.isnative
    )
