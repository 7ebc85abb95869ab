"""Backend choice: "auto" | "numpy" | "cpu" (Numba) | "cuda"."""
import importlib.util

from ._validation import check_choice
from .exceptions import BackendUnavailableError

BACKENDS = ("auto", "numpy", "cpu", "cuda")


def numba_available():
    """True when Numba can be imported."""
    return importlib.util.find_spec("numba") is not None


def resolve_backend(backend):
    """Return the concrete backend for ``backend``.

    "auto" picks the fastest available: "cpu" when Numba is installed,
    otherwise "numpy".

    Raises
    ------
    ValueError
        For an unknown name.
    BackendUnavailableError
        When an explicitly requested backend cannot run here.
    """
    check_choice("backend", backend, BACKENDS)
    if backend == "auto":
        return "cpu" if numba_available() else "numpy"
    if backend == "cpu" and not numba_available():
        raise BackendUnavailableError(
            "backend 'cpu' needs Numba, which is not installed; fix: pip install numba")
    if backend == "cuda":
        raise BackendUnavailableError(
            "backend 'cuda' is not available in this release of fastsd (the GPU "
            "path is not built yet); use backend='cpu' or 'auto'")
    return backend
