"""The Gaussian noise of DP-SGD: independent streams over fixed blocks.

Every step adds ``N(0, (sigma C)^2)`` to each of the ``P`` coordinates of the
clipped sum (the weights of every layer in order, then their biases, each
flattened in C order). The coordinates are cut into at most
:data:`MAX_BLOCKS` contiguous blocks, fixed by ``P`` alone; block ``k`` draws
its deviates, step after step, from its own generator: an ``SFC64`` bit
generator seeded with child ``k`` of a :class:`numpy.random.SeedSequence`
whose entropy is 128 bits drawn once per fit from the fit's generator.
Spawned seed sequences give independent streams, so the deviates are
independent across coordinates and steps, and the same seed gives the same
noise.

The deviates are NumPy's ziggurat (``Generator.standard_normal``), drawn in
numba (:func:`~sklearn_fil.neural._kernels.standard_normal_block`, the same
numbers as NumPy's fill, faster). ``SFC64`` is the fastest of NumPy's bit
generators; like them, it is not a cryptographic generator.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import numpy as np

# The most blocks of the noise, and the fewest coordinates per block.
MAX_BLOCKS = 8
MIN_BLOCK = 2**13


def seed_sequence(rng):
    """A :class:`~numpy.random.SeedSequence` from four 32-bit words of ``rng``.

    ``rng``, the fit's generator, is a ``RandomState`` or a ``Generator``.
    """
    if isinstance(rng, np.random.Generator):
        words = rng.integers(0, 2**32, size=4, dtype=np.uint64)
    else:
        words = rng.randint(0, 2**32, size=4, dtype=np.uint64)
    return np.random.SeedSequence([int(w) for w in words])


def block_bounds(size):
    """Bounds ``[0, ..., size]`` of the noise blocks of ``size`` coordinates.

    ``min(MAX_BLOCKS, size // MIN_BLOCK)`` blocks (at least one) of equal
    size up to one coordinate: a function of ``size`` alone.
    """
    n_blocks = max(1, min(MAX_BLOCKS, size // MIN_BLOCK))
    return [size * k // n_blocks for k in range(n_blocks + 1)]


class NoiseStreams:
    """Standard normal deviates for ``size`` coordinates, block by block.

    Parameters
    ----------
    size : int
        Number of coordinates of one release.
    seed : numpy.random.SeedSequence
        Spawns one child per block (see :func:`seed_sequence`).

    Attributes
    ----------
    blocks : list of (numpy.random.Generator, int, int)
        Each block's generator and its coordinates ``start:stop``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_fil.neural._noise import NoiseStreams
    >>> noise = NoiseStreams(20000, np.random.SeedSequence(0))
    >>> [(start, stop) for _, start, stop in noise.blocks]
    [(0, 10000), (10000, 20000)]
    >>> z = np.empty(20000)
    >>> noise.fill(z)
    >>> again = NoiseStreams(20000, np.random.SeedSequence(0))
    >>> bool(np.array_equal(z[10000:], again.blocks[1][0].standard_normal(10000)))
    True
    """

    def __init__(self, size, seed):
        bounds = block_bounds(size)
        children = seed.spawn(len(bounds) - 1)
        self.size = size
        self.blocks = [
            (np.random.Generator(np.random.SFC64(child)), start, stop)
            for child, start, stop in zip(
                children, bounds[:-1], bounds[1:], strict=True
            )
        ]

    def fill(self, out):
        """The next deviates of every block into ``out`` (host, ``(size,)``)."""
        if out.shape != (self.size,):
            raise ValueError(f"out must have shape ({self.size},); got {out.shape}.")
        from sklearn_fil.neural._kernels import standard_normal_block

        for g, lo, hi in self.blocks:
            standard_normal_block(g, out[lo:hi])
