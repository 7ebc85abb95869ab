"""Numba kernels of the image tasks (imported on first use, so that ``fastsd.tasks`` stays light)."""
import numpy as np

from .. import _jitcache


@_jitcache.njit
def _reflect(j, n):
    if 0 <= j < n:          # inside: no division (most pixels of a window)
        return j
    j = j % (2 * n)
    return j if j < n else 2 * n - 1 - j


@_jitcache.njit
def blurred_windows_kernel(stamps, origins, w, H, W, index, value):
    """The blurred windows of ``stamps`` as pixels: see ``_images.place_blurred``.

    stamps (n, k, s, s) float64, origins (n, k, 2) int64, w (n, 2R + 1) taps;
    writes index (n, k side^2) and value (n, k side^2), side = s + 2R: window
    row a holds image row origin - R + a, positions beyond the border fold
    back by 'reflect' (so an index can repeat near a border). Each image's sums
    run over its own taps (those within its radius; the others are 0 and would
    add +-0), in increasing offset, so the values are those of the full sums.
    """
    n, k, s = stamps.shape[0], stamps.shape[1], stamps.shape[2]
    T = w.shape[1]
    R = (T - 1) // 2
    side = s + 2 * R
    rows = np.empty((side, s))
    for i in range(n):
        r = R                                  # this image's radius: its non-zero taps
        while r > 0 and w[i, R - r] == 0.0:
            r -= 1
        for j in range(k):
            for a in range(side):              # blur along the columns of the stamp
                for c in range(s):
                    rows[a, c] = 0.0
                for t in range(max(R - r, 2 * R - a), min(R + r, s - 1 + 2 * R - a) + 1):
                    wt = w[i, t]
                    for c in range(s):
                        rows[a, c] += wt * stamps[i, j, a + t - 2 * R, c]
            r0 = origins[i, j, 0] - R
            c0 = origins[i, j, 1] - R
            for a in range(side):              # then along the rows
                rr = _reflect(r0 + a, H) * W
                for b in range(side):
                    acc = 0.0
                    for t in range(max(R - r, 2 * R - b), min(R + r, s - 1 + 2 * R - b) + 1):
                        acc += w[i, t] * rows[a, b + t - 2 * R]
                    e = (j * side + a) * side + b
                    index[i, e] = rr + _reflect(c0 + b, W)
                    value[i, e] = acc


@_jitcache.njit
def scatter_add(index, value, out):
    """out[i, index[i, e]] += value[i, e], in the order of e."""
    for i in range(index.shape[0]):
        for e in range(index.shape[1]):
            out[i, index[i, e]] += value[i, e]
