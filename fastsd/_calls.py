"""Long compiled work in calls of bounded length, so that a signal is handled promptly.

Python runs a signal handler (Ctrl-C, ``kill``'s SIGTERM) only between
bytecodes: during one long Numba call or GPU wait nothing can stop the
process but SIGKILL. Work of n units (SGD steps, walker batches) is therefore
handed to the kernels in spans whose length adapts to what a span took:
halved while a span takes over twice ``CALL_SECONDS``, doubled while it takes
under half, up to a cap. The spans cover the work in order, so any split
gives the same bits whenever the kernels carry their state across calls.
"""
import time

#: The longest a compiled call should run, in seconds.
CALL_SECONDS = 0.25


class Spans:
    """Split ranges of work into spans that last about ``CALL_SECONDS`` each.

    Parameters
    ----------
    cap : int, optional
        The most units in one span (e.g. what one span may allocate).

    Examples
    --------
    >>> spans = Spans()
    >>> covered = [(s, e) for s, e in spans.over(0, 5)]
    >>> covered[0][0], covered[-1][1]
    (0, 5)
    """

    def __init__(self, cap=None):
        self.length, self.cap = 1, cap

    def over(self, start, stop):
        """Yield (s, e) spans covering start .. stop in order, timing the work done between
        one yield and the next to size the following spans."""
        s = start
        while s < stop:
            e = min(stop, s + self.length)
            began = time.perf_counter()
            yield s, e
            elapsed = time.perf_counter() - began
            if elapsed > 2 * CALL_SECONDS:
                self.length = max(1, self.length // 2)
            elif elapsed < CALL_SECONDS / 2 and e - s == self.length:
                self.length = 2 * self.length if self.cap is None else min(2 * self.length,
                                                                           self.cap)
            s = e
