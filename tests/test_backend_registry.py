"""Every kernel family has the same three backend modules with one interface.

The registry (``fastsd._dispatch.FAMILIES``) declares each family's
interface once; here every runnable backend module must define each name of
it, functions with the reference's signature and engine tables with the
reference's paths' operations.
"""
import inspect

import pytest
from backends import REFERENCE, over_backends, unavailable

from fastsd._dispatch import BACKEND_TRAITS, FAMILIES, Family, resolve_backend, traits

ENGINE_OPERATIONS = ("run", "outputs", "params")


def test_every_family_is_registered():
    assert {"mlp", "walkers"} <= set(FAMILIES)
    for fam in FAMILIES.values():
        assert isinstance(fam, Family) and fam.interface


def cases():
    for name in sorted(FAMILIES):
        for b in FAMILIES[name].backends:
            reason = unavailable(name, b)
            yield pytest.param(name, b, id=f"{name}-{b}",
                               marks=[pytest.mark.skip(reason=reason)] if reason else [])


@pytest.mark.parametrize("family, backend", list(cases()))
def test_backend_module_defines_the_interface(family, backend):
    fam = FAMILIES[family]
    mod, ref = fam.module(backend), fam.module(REFERENCE)
    assert mod.__name__ == f"{fam.package}.{traits(backend).module}"
    for name in fam.interface:
        assert hasattr(mod, name), f"{mod.__name__} lacks {name}"
        got, want = getattr(mod, name), getattr(ref, name)
        if callable(want):
            assert inspect.signature(got) == inspect.signature(want), (mod.__name__, name)
        elif isinstance(want, dict):        # an engine table: path -> engine class
            assert set(want) <= set(got), (mod.__name__, name)
            for cls in got.values():
                for op in ENGINE_OPERATIONS:
                    assert callable(getattr(cls, op, None)), (cls, op)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_load_resolves_with_the_one_chooser(family):
    fam = FAMILIES[family]
    for b in fam.available():
        name, mod = fam.load(b)
        assert name == b and mod is fam.module(b)
    # "auto" never picks the simulator: the same choice as resolve_backend's
    name, _ = fam.load("auto")
    assert name in ("cpu", "numpy") or resolve_backend("auto", needs_cupy=False) == "cuda"


def test_unknown_backend_is_refused_naming_the_choices():
    with pytest.raises(ValueError, match="backend"):
        FAMILIES["walkers"].load("tpu")
    with pytest.raises(ValueError, match="backend"):
        FAMILIES["walkers"].module("auto")


def test_each_family_names_its_own_package():
    for name, fam in FAMILIES.items():
        assert fam.name == name and fam.package == f"fastsd.{name}"


@over_backends("walkers")
def test_harness_runs_one_body_over_every_backend(backend):
    """The harness itself: each backend's walkers equal the reference's, bit for bit."""
    from fastsd.walkers import simulate
    kw = dict(L=5, batch_size=7, n_iters=4, readout=-1, n_walkers=3, seed=11)
    got, want = simulate(backend=backend, **kw), simulate(backend=REFERENCE, **kw)
    assert got.config["backend"] == backend
    for k in ("omega1", "omega2", "counts", "active"):
        assert (getattr(got, k) == getattr(want, k)).all()


def test_every_backend_has_one_row_of_traits_and_every_family_names_its_backends():
    assert set(BACKEND_TRAITS) == {"numpy", "cpu", "cuda"}
    for name, b in BACKEND_TRAITS.items():
        assert traits(name) is b and b.name == name and b.default_dtype == b.dtypes[0]
        assert b.device in ("host", "gpu") and set(b.dtypes) <= {"float32", "float64"}
    # the float64 reference, the host's compiled engines, the GPU's lockstep ensembles
    assert traits("numpy").dtypes == ("float64",) and not traits("numpy").priced
    assert traits("cpu").device == "host" and traits("cpu").priced
    assert traits("cuda").one_process and traits("cuda").lockstep
    assert traits("cuda").device_batches and not traits("cpu").device_batches
    for fam in FAMILIES.values():
        assert fam.backends and set(fam.backends) <= set(BACKEND_TRAITS)
    with pytest.raises(ValueError, match="`backend` must be one of"):
        traits("auto")


def test_a_family_refuses_a_backend_it_does_not_have():
    only = Family("walkers", "fastsd.walkers", ("simulate",), ("numpy",))
    assert only.resolve("numpy") == "numpy" and only.available() == ["numpy"]
    with pytest.raises(ValueError, match="`backend` must be one of 'auto', 'numpy'; got 'cpu'"):
        only.resolve("cpu")


def test_a_gpu_numba_cuda_cannot_compile_for_is_unavailable(monkeypatch):
    """Seen on a real H200: numba-cuda 0.30.4 under NumPy 2.5 sees the GPU but fails at its
    first compile (``np.row_stack`` is gone). "cuda" must then be unavailable with that
    reason, and "auto" fall back to "cpu", instead of every cell failing after it starts."""
    from numba import cuda

    from fastsd import _dispatch
    from fastsd.exceptions import BackendUnavailableError

    def broken_jit(*args, **kwargs):
        raise AttributeError("module 'numpy' has no attribute 'row_stack'")

    monkeypatch.setattr(_dispatch, "cuda_simulator", lambda: False)
    monkeypatch.setattr(cuda, "jit", broken_jit)
    error = _dispatch.numba_cuda_compile_error.__wrapped__()
    assert "AttributeError: module 'numpy' has no attribute 'row_stack'" in error
    assert "numba-cuda" in error and "numpy" in error

    monkeypatch.setattr(_dispatch, "numba_cuda_available", lambda: True)
    monkeypatch.setattr(_dispatch, "numba_cuda_compile_error", lambda: error)
    monkeypatch.setattr(_dispatch, "cupy_available", lambda: True)
    reason = _dispatch.cuda_unavailable_reason(needs_cupy=True)
    assert "cannot" in reason and "row_stack" in reason and "backend='cpu'" in reason
    assert _dispatch.resolve_backend("auto", needs_cupy=True) == "cpu"
    with pytest.raises(BackendUnavailableError, match="row_stack"):
        _dispatch.resolve_backend("cuda")


def test_the_compile_probe_passes_where_numba_cuda_works():
    """Under the simulator nothing is compiled; on a GPU the probe kernel must run."""
    from fastsd import _dispatch
    if _dispatch.cuda_simulator() or _dispatch.numba_cuda_available():
        assert _dispatch.numba_cuda_compile_error() is None
    else:
        pytest.skip("no GPU and no simulator: the probe is not reached")


def test_low_occupancy_warnings_do_not_reach_users():
    """Seen on a real H200: every small grid printed "fastsd: warning: Grid size 1 will likely
    result in GPU under-utilization ..." under ``fastsd reproduce --backend cuda``. The cuda
    modules call ``quiet_low_occupancy`` when imported (pytest restores the filters after each
    test, so it is called here); that message, as Numba-CUDA words it (in bold), is then
    silent, and other performance warnings are not."""
    import warnings

    from numba.core.errors import NumbaPerformanceWarning

    from fastsd import _dispatch
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _dispatch.quiet_low_occupancy()
        warnings.warn(NumbaPerformanceWarning("\x1b[1mGrid size 72 will likely result in GPU "
                                              "under-utilization due to low occupancy.\x1b[0m"))
        warnings.warn(NumbaPerformanceWarning("Grid size 1 will likely result in GPU "
                                              "under-utilization due to low occupancy."))
        warnings.warn(NumbaPerformanceWarning("Host array used in CUDA kernel will incur copy "
                                              "overhead to/from device."))
    assert [str(w.message) for w in seen] == [
        "Host array used in CUDA kernel will incur copy overhead to/from device."]
