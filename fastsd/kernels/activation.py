"""The lazy limit's kernels for an activation other than ReLU: a kernels backend whose entries
are the activation's (``fastsd.activations.Activation.kernels_from_gram``).

``ActivationKernels(activation, host)`` has the kernels family's interface
(``fastsd.kernels.backend``) for the pair kernels: ``pair_kernel``, ``pair_kernel_matvec``
and ``kernel_entries`` evaluate the activation's k0 and k1 from the symbols' dot-product
tables and squared norms (closed forms, else Mehler's Hermite series, its coefficients kept
a run long in one ``fastsd._mehler.SeriesTable``, its sums compiled), as the NTK
(x.y) k0 + k1 or the NNGP kernel k1; the solve, the copy to the host and kernel SGD are the
host backend's ("numpy" or "cpu"). ``diagonal`` is the kernel of each input with itself, and
``refines`` is False: the arc-cosine's correction of near-collinear entries from the vectors
(``fastsd.kernels.pairs.near_pairs``) is ReLU's; the series takes rho = +-1 by a
one-dimensional sum and has no square root in rho to lose digits in.
"""
import numpy as np

#: Bytes of the entries formed at once (a block of rows).
_BLOCK_BYTES = 32 << 20


class ActivationKernels:
    """A kernels backend (``fastsd.kernels.backend``) for ``activation`` on the host backend
    ``host`` (a module whose ``xp`` is NumPy)."""

    refines = False

    def __init__(self, activation, host):
        self.activation = activation
        self.table = activation.series_table()
        self.xp = np
        self.cho_solve, self.to_host, self.kernel_sgd = host.cho_solve, host.to_host, \
            host.kernel_sgd

    def kernel_entries(self, dot, nx2, ny2, kind="ntk"):
        """The kernel from dot products (n, k) and squared norms (n,), (n, k) (or any shape
        that broadcasts to it); (n, k)."""
        dot = np.asarray(dot, dtype=np.float64)
        k0, k1 = self.activation.kernels_from_gram(dot, np.asarray(nx2)[:, None], ny2,
                                                   table=self.table)
        return k1 if kind == "nngp" else dot * k0 + k1

    def diagonal(self, n2, kind="ntk"):
        """The kernel of each input with itself, from the squared norms (P,)."""
        return self.kernel_entries(n2[:, None], n2, n2[:, None], kind)[:, 0]

    def pair_kernel(self, T1, r1, T2, r2, rn2, c1, c2, cn2, kind="ntk"):
        """The (n, k) block between row pairs and column pairs (``fastsd.kernels.backend``)."""
        out = np.empty((len(r1), len(c1)))
        for s, e in self._blocks(len(r1), len(c1)):
            dot = T1[r1[s:e]][:, c1] + T2[r2[s:e]][:, c2]
            out[s:e] = self.kernel_entries(dot, rn2[s:e], np.asarray(cn2)[None, :], kind)
        return out

    def pair_kernel_matvec(self, T1, r1, T2, r2, rn2, c1, c2, cn2, V, kind="ntk"):
        """That block times V (k, r), without storing the block: (n, r)."""
        out = np.empty((len(r1), V.shape[1]))
        for s, e in self._blocks(len(r1), len(c1)):
            out[s:e] = self.pair_kernel(T1, r1[s:e], T2, r2[s:e], rn2[s:e], c1, c2, cn2,
                                        kind) @ V
        return out

    @staticmethod
    def _blocks(n, k):
        step = max(1, _BLOCK_BYTES // (8 * 4 * max(k, 1)))
        return [(s, min(n, s + step)) for s in range(0, n, step)]
