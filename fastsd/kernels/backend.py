"""The kernels family's backends: one interface, three modules, one chooser.

``KERNELS`` is the family (declared in ``fastsd._dispatch.FAMILIES``). Backend b
lives in ``fastsd.kernels._reference`` ("numpy", the float64 truth),
``_cpu`` (Numba) or ``_cuda`` (CuPy: the reference's own array code on the
GPU). ``KERNELS.load(backend)`` resolves "auto" and checks availability
(``resolve_backend``, "cuda" needing CuPy) and returns (name, module);
``arccos``/``nngp``/``ntk`` take "cuda" for CuPy inputs and "numpy" for the
rest through ``KERNELS.module``. Nothing else in ``fastsd.kernels`` branches
on the backend.

Interface: every backend module defines these names, with the same signatures
(tests/test_kernels_backends.py checks both, and each backend's values against
the reference's):

``xp``
    The array module of the backend's arrays (numpy, or cupy).
``arccos_kernels(X, Y)``
    (k0, k1, ntk) between the rows of X (n, p) and Y (k, p), float64 (n, k).
``pair_kernel(T1, r1, T2, r2, rn2, c1, c2, cn2, kind="ntk")``
    The (n, k) kernel block between row pairs and column pairs given by their
    symbol dot-product tables (T1[r1[i], c1[j]] + T2[r2[i], c2[j]] = x_i . x_j)
    and squared norms; ``kind`` "ntk" or "nngp" (k1, ``_reference.KINDS``).
``pair_kernel_matvec(T1, r1, T2, r2, rn2, c1, c2, cn2, V, kind="ntk")``
    That block times V (k, r), (n, r), without storing the block.
``kernel_entries(dot, nx2, ny2, kind="ntk")``
    The kernel of n inputs against k inputs each, from dot products (n, k)
    and squared norms (n,) and (n, k): kernel entries that are no block of
    pairs (the structured solver's test rows, ``fastsd.kernels.kron``).
``kernel_sgd(op, c, idx, y, lr)``
    Kernel SGD over the (steps, batch) pair indices ``idx`` with labels ``y``
    on the training kernel ``op`` (a ``fastsd.kernels.solvers.Solver``),
    updating c in place; returns (c, mean batch BCE).
``cho_solve(A, b)``
    A^-1 b by Cholesky; ``numpy.linalg.LinAlgError`` unless A is positive definite.
``to_host(a)``
    ``a`` as a NumPy array.

A backend is one module defining these names, named as in every family
(``fastsd._dispatch.BACKEND_TRAITS``); the family's interface tuple in
``fastsd._dispatch.FAMILIES`` is the one list to extend when a solver or the
dynamics need a new primitive.
"""
from .._dispatch import FAMILIES

#: The kernels family; "cuda" needs CuPy (the reference's code on CuPy arrays).
KERNELS = FAMILIES["kernels"]
