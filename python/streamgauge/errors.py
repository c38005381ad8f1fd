"""The streamgauge exception hierarchy: everything derives from Error.

Each class also derives from the matching built-in exception, so code that
catches ``TypeError`` or ``ValueError`` keeps working.
"""

import builtins


class Error(Exception):
    """Base class of every streamgauge exception."""


class ConfigError(Error, builtins.ValueError):
    """Invalid options, environment variables, configuration file or names."""


class TypeError(Error, builtins.TypeError):  # noqa: A001 (shadows on purpose)
    """An injected value does not match its field's type, or wrong arity."""


class ValueError(Error, builtins.ValueError):  # noqa: A001
    """A value is out of range (e.g. a sample larger than the queue)."""


class StateError(Error, builtins.RuntimeError):
    """A call in the wrong lifecycle state (inject before start, after close)."""


__all__ = ["Error", "ConfigError", "TypeError", "ValueError", "StateError"]
