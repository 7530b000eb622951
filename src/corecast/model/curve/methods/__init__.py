"""Registry of prediction methods.  Each method maps measurements to a ``Fit``.

A method module registers itself with ``@register``; ``corecast.predict`` and the CLI
look methods up here, so adding one is one decorated function.
"""
from __future__ import annotations

from .registry import METHODS, Method, check_usable, get, register, unread_columns

__all__ = ["METHODS", "Method", "check_usable", "get", "register", "unread_columns"]

# Importing the modules registers their methods (order = order in help texts).
from . import auto, estima, laws, presca, regression, sizemodel, trend  # noqa: E402,F401
