"""Progress bars on stderr: a tqdm bar where one is shown, no tqdm object where not.

Even a disabled tqdm bar creates tqdm's multiprocessing lock (semaphores). In a
scan's worker processes, which are terminated when the scan stops, those
semaphores are reported as leaked when the scan exits. So every bar in fastsd
comes from ``bar``, which returns a do-nothing stand-in when the bar is off.
"""
import contextlib


class _NoBar:
    """The stand-in for a bar that is not shown."""

    def update(self, n=1):
        """Do nothing (tqdm's ``update``)."""

    def set_description_str(self, desc=None, refresh=True):
        """Do nothing (tqdm's ``set_description_str``)."""


def bar(show, **kwargs):
    """A context manager giving a tqdm bar when ``show``, else a stand-in with ``update``.

    Parameters
    ----------
    show : bool
        Whether to show the bar.
    **kwargs
        Passed to ``tqdm.auto.tqdm`` (``total``, ``desc``, ``unit``,
        ``initial``, ...); the bar's width follows the terminal.
    """
    if not show:
        return contextlib.nullcontext(_NoBar())
    from tqdm.auto import tqdm
    return tqdm(dynamic_ncols=True, **kwargs)


def advance(bar, n):
    """``bar.update(n)``, but never past its total: a total that is a sum of float works may
    be passed by their updates' rounding, and tqdm then warns ("clamping frac") and shows a
    negative time left."""
    total = getattr(bar, "total", None)
    bar.update(max(0.0, min(n, total - bar.n)) if total else n)


def clock(seconds):
    """Seconds as H:MM:SS (rounded to the second), for predicted and elapsed wall times."""
    seconds = int(round(seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
