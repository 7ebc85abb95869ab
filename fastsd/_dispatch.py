"""Backend choice: "auto" | "numpy" | "cpu" (Numba) | "cuda" (Numba-CUDA, CuPy).

``resolve_backend`` is the one place that decides. A kernel family that runs
on the GPU through Numba-CUDA alone (the walkers) asks for "cuda" with
``needs_cupy=False``; one that also needs CuPy's cuBLAS (the MLP) passes
``needs_cupy=True``, except under the simulator, where the MLP's engines
hold NumPy arrays instead. Under ``NUMBA_ENABLE_CUDASIM=1`` Numba-CUDA
kernels run on the CPU simulator, so "cuda" is available for tests without a
GPU, but "auto" never picks the simulator.
"""
import importlib.util
import os

from ._validation import check_choice
from .exceptions import BackendUnavailableError

BACKENDS = ("auto", "numpy", "cpu", "cuda")


def numba_available():
    """True when Numba can be imported."""
    return importlib.util.find_spec("numba") is not None


def cuda_simulator():
    """True when Numba runs CUDA kernels on its CPU simulator (NUMBA_ENABLE_CUDASIM=1)."""
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def numba_cuda_available():
    """True when Numba-CUDA can launch kernels: a usable GPU, or the simulator."""
    if not numba_available():
        return False
    try:
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:       # a broken driver or toolkit counts as unavailable
        return False


def cupy_available():
    """True when CuPy imports and sees at least one GPU."""
    if importlib.util.find_spec("cupy") is None:
        return False
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def cuda_unavailable_reason(needs_cupy=False):
    """Return why backend "cuda" cannot run here, or None when it can."""
    if not numba_cuda_available():
        return ("backend 'cuda' needs an NVIDIA GPU with a working driver and Numba-CUDA, and "
                "none was found; fix: run on a GPU machine after `pip install -e '.[gpu]'` in "
                "the fastsd checkout, or use backend='cpu'")
    if needs_cupy and not cupy_available():
        return ("backend 'cuda' needs CuPy and a GPU for its GEMMs, and "
                + ("CuPy is not installed" if importlib.util.find_spec("cupy") is None
                   else "CuPy sees no GPU")
                + "; fix: `pip install -e '.[gpu]'` in the fastsd checkout on a GPU machine, "
                  "or use backend='cpu'")
    return None


def resolve_backend(backend, *, needs_cupy=False):
    """Return the concrete backend for ``backend``.

    Parameters
    ----------
    backend : {"auto", "numpy", "cpu", "cuda"}
    needs_cupy : bool, default False
        Whether the caller's "cuda" path needs CuPy as well as Numba-CUDA.

    Returns
    -------
    str
        "numpy", "cpu" or "cuda". "auto" picks "cuda" only on a real GPU
        with everything the caller needs, then "cpu" when Numba is
        installed, otherwise "numpy".

    Raises
    ------
    ValueError
        For an unknown name.
    BackendUnavailableError
        When an explicitly requested backend cannot run here; the message
        names the fix.
    """
    check_choice("backend", backend, BACKENDS)
    if backend == "auto":
        if not cuda_simulator() and cuda_unavailable_reason(needs_cupy) is None:
            return "cuda"
        return "cpu" if numba_available() else "numpy"
    if backend == "cpu" and not numba_available():
        raise BackendUnavailableError(
            "backend 'cpu' needs Numba, which is not installed; fix: pip install numba")
    if backend == "cuda":
        reason = cuda_unavailable_reason(needs_cupy)
        if reason is not None:
            raise BackendUnavailableError(reason)
    return backend
