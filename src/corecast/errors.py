"""The user-facing error type, in a module of its own so that the file readers
(``corecast.io.fileio``) and the runtime model inside profiled programs can raise it
without importing numpy."""
from __future__ import annotations


class InputError(ValueError):
    """Bad or insufficient input; the message is one line meant for the user."""
