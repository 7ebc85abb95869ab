"""Stopping scans: one stop request that every thread of a scan checks before it writes.

A signal reaches only the main thread, but ``fastsd.scan.run`` also runs in
other threads (``fastsd.reproduce`` runs a figure's parts side by side on
one pool of workers). Once the main thread stops, those threads must write
no further cell and wait for no further group. The main thread calls
``request`` (the ``fastsd`` command's signal handlers, and a figure's run
when Ctrl-C reaches it); each scan thread waits for its groups through
``check`` and writes each cell inside ``writing``. ``request`` and
``writing`` hold one lock, so no cell is written once ``request`` returns.
"""
import threading
from contextlib import contextmanager

_requested = threading.Event()
_lock = threading.RLock()       # reentrant: the main thread may be inside ``writing``
_active = [0]                   # scans running in this process


class Stopped(KeyboardInterrupt):
    """The scan this thread works for was stopped (by a signal to the main thread)."""


def request():
    """Stop every scan of this process: no cell is written after this returns."""
    with _lock:
        _requested.set()


def check():
    """Raise ``Stopped`` when a stop was requested."""
    if _requested.is_set():
        raise Stopped()


@contextmanager
def writing():
    """Hold while writing a cell; raises ``Stopped`` instead once a stop was requested."""
    with _lock:
        check()
        yield


@contextmanager
def scope():
    """Mark a scan as running; the first scan to start forgets an earlier stop request."""
    with _lock:
        if _active[0] == 0:
            _requested.clear()
        _active[0] += 1
    try:
        yield
    finally:
        with _lock:
            _active[0] -= 1
