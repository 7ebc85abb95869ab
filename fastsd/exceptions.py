"""Exceptions raised by fastsd."""


class BackendUnavailableError(RuntimeError):
    """An explicitly requested backend cannot run on this machine.

    The message names the backend, why it is unavailable and how to fix it
    (usually which extra to install).
    """


class StoreLockedError(RuntimeError):
    """A results store is being written by another run.

    The message names that run (pid, host, command line, start time), the
    lock file next to the store, and how to remove a lock its run left
    behind.
    """
