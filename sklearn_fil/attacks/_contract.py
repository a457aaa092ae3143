"""The attack contract: ``fit(X, y=None, **fit_params)``, then one verb.

Every attack learns in ``fit``: its other inputs (``sample_weight``,
``membership``, ``step``...) are keyword fit parameters. The methods called
after ``fit`` (the verb of its results, ``score``) do not change the attack.
"""

# Authors: The sklearn-fil developers
# SPDX-License-Identifier: BSD-3-Clause

import functools
import inspect
import warnings


def deprecation(message):
    """Warn that a deprecated form is used, at the caller of the public method."""
    warnings.warn(
        f"{message} is deprecated in sklearn-fil 0.1 and will be removed in 0.2.",
        FutureWarning,
        stacklevel=3,
    )


def keyword_fit_params(fit):
    """Let ``fit`` take its keyword-only fit parameters positionally, deprecated.

    The former signatures passed them after ``X`` and ``y``: they are mapped
    to the keywords in order, with a FutureWarning.
    """
    params = list(inspect.signature(fit).parameters.values())[1:]
    n_positional = sum(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
    keywords = [p.name for p in params if p.kind == p.KEYWORD_ONLY]

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        extra = args[n_positional:]
        if extra:
            if len(extra) > len(keywords):
                raise TypeError(
                    f"fit takes {n_positional} positional arguments; got {len(args)}."
                )
            names = keywords[: len(extra)]
            deprecation(
                f"Passing {', '.join(names)} to {type(self).__name__}.fit "
                f"positionally (pass {', '.join(f'{n}=...' for n in names)})"
            )
            kwargs.update(zip(names, extra, strict=True))
        return fit(self, *args[:n_positional], **kwargs)

    return wrapper


def require(value, name, attack):
    """Raise a ValueError when the required input ``name`` is None."""
    if value is None:
        raise ValueError(
            f"{type(attack).__name__} requires {name} to be passed, but it is None."
        )
    return value
