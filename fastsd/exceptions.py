"""Exceptions raised by fastsd."""


class BackendUnavailableError(RuntimeError):
    """An explicitly requested backend cannot run on this machine.

    The message names the backend, why it is unavailable and how to fix it
    (usually which extra to install).
    """


class SizeTooLargeError(MemoryError, ValueError):
    """A requested size would not fit in memory; raised before allocating anything.

    The message names the parameter and its value, the bytes needed (for what)
    and the memory available, as in "`width` = 1000000000 needs 29.80 TiB for
    the hidden weights (...), but 20.10 GiB is available; use a smaller
    `width`." It is a ``MemoryError`` (what it prevents) and a ``ValueError``
    (a bad input).
    """


class StoreLockedError(RuntimeError):
    """A results store is being written by another run.

    The message names that run (pid, host, command line, start time), the
    lock file next to the store, and how to remove a lock its run left
    behind.
    """
