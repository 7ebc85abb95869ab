"""Exceptions raised by fastsd."""


class BackendUnavailableError(RuntimeError):
    """An explicitly requested backend cannot run on this machine.

    The message names the backend, why it is unavailable and how to fix it
    (usually which extra to install).
    """
