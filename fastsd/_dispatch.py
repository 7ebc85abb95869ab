"""Backend choice ("auto" | "numpy" | "cpu" | "cuda") and the registry of kernel families.

``resolve_backend`` is the one place that decides. A kernel family that runs
on the GPU through Numba-CUDA alone (the walkers) asks for "cuda" with
``needs_cupy=False``; one that also needs CuPy's cuBLAS (the MLP) passes
``needs_cupy=True``, except under the simulator, where the MLP's engines
hold NumPy arrays instead. Under ``NUMBA_ENABLE_CUDASIM=1`` Numba-CUDA
kernels run on the CPU simulator, so "cuda" is available for tests without a
GPU, but "auto" never picks the simulator.

Each backend is declared once, in ``BACKEND_TRAITS``: its module's name in every
family and its traits (where its arrays live, its dtypes, whether one process
drives it, whether it is priced), which the code asks (``traits``) instead of
comparing names.

Every kernel family (mlp, walkers, kernels) is declared once, in ``FAMILIES``:
the backends it has (a module each in its package: ``_reference``, ``_cpu``,
``_cuda``), one interface they all implement, and what its "cuda" backend needs.
Entry points call ``Family.load(backend)``; the tests run one body over
``Family.available()`` against the reference.
"""
import functools
import importlib
import importlib.util
import os
from dataclasses import dataclass

from ._validation import check_choice
from .exceptions import BackendUnavailableError


# -- what each backend is -----------------------------------------------------------
@dataclass(frozen=True)
class Backend:
    """A concrete backend's traits: what code asks instead of comparing names.

    Attributes
    ----------
    name : str
        "numpy", "cpu" or "cuda".
    module : str
        Its module's name inside every family's package ("_reference", "_cpu", "_cuda").
    device : {"host", "gpu"}
        Where its arrays live.
    dtypes : tuple of str
        The dtypes its engines run, the default first.
    one_process : bool
        One process drives it: a scan runs its groups in this process, a figure's
        parts one after another (not one worker per core).
    lockstep : bool
        Its ensembles run in lockstep on one device, so a scan's group may span
        seeds (on the host each model runs on its own thread and only models of
        one seed share work).
    device_batches : bool
        It can draw the training batches on the device (``batches="device"``).
    priced : bool
        The cost models price it (``fastsd.mlp.costs``; the lazy limit's and Bayes
        prices are the host's, ``device == "host"``).
    """

    name: str
    module: str
    device: str
    dtypes: tuple
    one_process: bool = False
    lockstep: bool = False
    device_batches: bool = False
    priced: bool = False

    @property
    def default_dtype(self):
        """The dtype its engines run unless told otherwise."""
        return self.dtypes[0]


#: The one table of backends, in the order "auto" falls back through them reversed.
BACKEND_TRAITS = {b.name: b for b in (
    Backend("numpy", "_reference", "host", ("float64",)),
    Backend("cpu", "_cpu", "host", ("float32", "float64"), priced=True),
    Backend("cuda", "_cuda", "gpu", ("float32", "float64"), one_process=True, lockstep=True,
            device_batches=True, priced=True),
)}


def traits(backend):
    """The ``Backend`` of a concrete backend name ("numpy", "cpu" or "cuda").

    Raises
    ------
    ValueError
        For another name (resolve "auto" first: ``resolve_backend``).
    """
    check_choice("backend", backend, tuple(BACKEND_TRAITS))
    return BACKEND_TRAITS[backend]


def check_dtype(backend, dtype, asked=None):
    """Raise unless the concrete ``backend`` runs ``dtype`` (a name, "float32" or "float64").

    ``asked`` is the backend the caller was given, when it resolved to ``backend``
    ("auto"), so that the message says which one runs here.

    Raises
    ------
    ValueError
        Naming `dtype`, the backend's dtypes and the value.
    """
    allowed = traits(backend).dtypes
    if dtype not in allowed:
        here = "" if asked in (None, backend) else f" (what backend {asked!r} runs on here)"
        raise ValueError(f"`dtype` must be {' or '.join(map(repr, allowed))} with backend "
                         f"{backend!r}{here}; got {dtype!r}.")


#: The names a public entry point accepts: "auto" and every concrete backend.
BACKENDS = ("auto",) + tuple(BACKEND_TRAITS)


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


@functools.cache
def numba_cuda_compile_error():
    """Why Numba-CUDA cannot compile and launch a kernel on the GPU it sees, or None.

    A visible GPU is not enough: compiling needs Numba-CUDA's own modules, NVVM and
    libdevice, and they can break where the driver works (seen: numba-cuda 0.30.4 under
    NumPy 2.5 fails at its first compile, ``np.row_stack`` being gone). So one
    one-thread kernel is compiled and launched, once a process. None under the simulator,
    which compiles nothing.
    """
    if cuda_simulator():
        return None
    try:
        import numpy as np
        from numba import cuda

        @cuda.jit
        def _probe(x):
            x[0] += 1.0

        x = cuda.to_device(np.zeros(1))
        _probe[1, 1](x)
        if x.copy_to_host()[0] != 1.0:
            return "a one-thread probe kernel ran but did not write its result"
    except Exception as exc:    # any failure to compile or launch: the reason is the message
        versions = ", ".join(f"{name} {_version(name)}"
                             for name in ("numba", "numba-cuda", "numpy"))
        return f"{type(exc).__name__}: {exc} ({versions})"
    return None


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def quiet_low_occupancy():
    """Silence Numba-CUDA's "Grid size N will likely result in GPU under-utilization" warning.

    fastsd's kernels launch one block per (model, row) or per model, so a small ensemble's
    grid is small by design; the warning (one per kernel and grid size) reached users of
    ``fastsd reproduce --backend cuda`` as "fastsd: warning: Grid size 1 ..." and said nothing
    they could act on. Only that message of ``NumbaPerformanceWarning`` is filtered.
    """
    import warnings

    from numba.core.errors import NumbaPerformanceWarning
    warnings.filterwarnings("ignore", message=r"(\x1b\[1m)?Grid size \d+ will likely result in GPU "
                            "under-utilization", category=NumbaPerformanceWarning)


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
    error = numba_cuda_compile_error()
    if error is not None:
        return ("backend 'cuda' needs Numba-CUDA to compile kernels, and it sees a GPU but "
                f"cannot: {error}; fix: `pip install -e '.[gpu]'` in the fastsd checkout "
                "(it installs versions that work together), or use backend='cpu'")
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


def target_backend(backend):
    """The backend a scan's groups will run on, checked before anything runs.

    An explicit "cpu" or "cuda" that cannot run here raises
    ``BackendUnavailableError`` (for "cuda": no GPU with Numba-CUDA; a
    predictor that also needs CuPy reports that when its group runs). "auto"
    picks "cuda" only where the "mlp" path has everything it needs.
    """
    return resolve_backend(backend, needs_cupy=backend == "auto")


# -- the registry of kernel families -----------------------------------------------


@dataclass(frozen=True)
class Family:
    """A kernel family's backends: one module per backend, all defining ``interface``.

    Attributes
    ----------
    name : str
        The family ("mlp", "walkers", "kernels").
    package : str
        Its package; backend b lives in ``package + "." + traits(b).module``.
    interface : tuple of str
        The names every backend module defines, with one signature across
        backends (tests/test_backend_registry.py checks it).
    needs_cupy : {False, True, "device"}
        Whether the family's "cuda" backend needs CuPy as well as
        Numba-CUDA: always, never, or ("device") on a real GPU only, the
        simulator's engines holding NumPy arrays.
    backends : tuple of str
        The concrete backends it has (names in ``BACKEND_TRAITS``), each a module of its
        package: a new backend is added to the families that get a module for it.
    """

    name: str
    package: str
    interface: tuple
    backends: tuple
    needs_cupy: object = False

    def resolve(self, backend):
        """The concrete backend for ``backend`` (``resolve_backend`` with this family's needs).

        Raises
        ------
        ValueError
            For a name that is not "auto" or one of the family's ``backends``.
        BackendUnavailableError
            As ``resolve_backend``.
        """
        check_choice("backend", backend, ("auto",) + self.backends)
        needs = (not cuda_simulator()) if self.needs_cupy == "device" else bool(self.needs_cupy)
        return resolve_backend(backend, needs_cupy=needs)

    def module(self, backend):
        """The module of a concrete backend ("numpy", "cpu" or "cuda"), imported on first use."""
        check_choice("backend", backend, self.backends)
        return importlib.import_module(f"{self.package}.{traits(backend).module}")

    def load(self, backend):
        """Resolve ``backend`` and return (its concrete name, its module).

        Raises
        ------
        ValueError, BackendUnavailableError
            As ``resolve_backend``.
        """
        name = self.resolve(backend)
        return name, self.module(name)

    def available(self):
        """The concrete backends that can run here (the simulator counts for "cuda")."""
        out = []
        for b in self.backends:
            try:
                self.resolve(b)
            except BackendUnavailableError:
                continue
            out.append(b)
        return out


#: The one registry: every kernel family, declared here, importable without importing it.
FAMILIES = {f.name: f for f in (
    # ENGINES: path -> engine class; with two paths, step_features (fastsd.mlp.costs)
    Family("mlp", "fastsd.mlp", ("ENGINES",), ("numpy", "cpu", "cuda"), needs_cupy="device"),
    # the App. C.3 process: simulate, run (pre-drawn), buffers (memory needs)
    Family("walkers", "fastsd.walkers", ("simulate", "run", "buffers"), ("numpy", "cpu", "cuda")),
    # the arc-cosine kernels and the lazy limit's pair-kernel primitives (fastsd.kernels.backend)
    Family("kernels", "fastsd.kernels", ("xp", "arccos_kernels", "pair_kernel",
                                         "pair_kernel_matvec", "kernel_entries", "kernel_sgd",
                                         "cho_solve", "to_host"),
           ("numpy", "cpu", "cuda"), needs_cupy=True),
)}
