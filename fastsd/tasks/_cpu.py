"""Numba kernels of the image tasks (imported on first use, so that ``fastsd.tasks`` stays light)."""
import numpy as np

from .. import _jitcache


@_jitcache.njit
def _reflect(j, n):
    j = j % (2 * n)
    return j if j < n else 2 * n - 1 - j


@_jitcache.njit
def blurred_windows_kernel(stamps, origins, w, H, W, index, value):
    """The blurred windows of ``stamps`` as pixels: see ``_images.place_blurred``.

    stamps (n, k, s, s) float64, origins (n, k, 2) int64, w (n, 2R + 1) taps;
    writes index (n, k side^2) and value (n, k side^2), side = s + 2R: window
    row a holds image row origin - R + a, positions beyond the border fold
    back by 'reflect' (so an index can repeat near a border).
    """
    n, k, s = stamps.shape[0], stamps.shape[1], stamps.shape[2]
    T = w.shape[1]
    R = (T - 1) // 2
    side = s + 2 * R
    rows = np.empty((side, s))
    for i in range(n):
        for j in range(k):
            for a in range(side):
                for c in range(s):
                    acc = 0.0
                    for t in range(T):
                        q = a + t - 2 * R
                        if 0 <= q < s:
                            acc += w[i, t] * stamps[i, j, q, c]
                    rows[a, c] = acc
            r0 = origins[i, j, 0] - R
            c0 = origins[i, j, 1] - R
            for a in range(side):
                r = _reflect(r0 + a, H)
                for b in range(side):
                    acc = 0.0
                    for t in range(T):
                        q = b + t - 2 * R
                        if 0 <= q < s:
                            acc += w[i, t] * rows[a, q]
                    e = (j * side + a) * side + b
                    index[i, e] = r * W + _reflect(c0 + b, W)
                    value[i, e] = acc


@_jitcache.njit
def scatter_add(index, value, out):
    """out[i, index[i, e]] += value[i, e], in the order of e."""
    for i in range(index.shape[0]):
        for e in range(index.shape[1]):
            out[i, index[i, e]] += value[i, e]
