"""How fastsd compiles: Numba's on-disk cache keyed on the whole package, and ``jitable``.

Numba checks only the stamp of the file that defines a cached function. A
kernel that compiles code from another file (the walkers compile their
reference's generator, the MLP and pair-kernel builds inline
``fastsd._numerics``) would load stale machine code after that other file
changed, until someone cleared ``__pycache__`` by hand. ``njit`` here is
``numba.njit(cache=True)`` with the cache in a folder named by a hash of
every fastsd source file: any change to any of them compiles afresh, and
nothing stale is ever loaded. The folder sits under
``NUMBA_CACHE_DIR`` when that is set, else in ``numba/`` under fastsd's cache
root, ``cache_root()``: ``$XDG_CACHE_HOME/fastsd`` (default ``~/.cache/fastsd``),
where the measured cost model of the training paths (``fastsd.mlp.costs``) is
kept too. Only fastsd's own kernels go there: the setting is held while each of
them is decorated, then restored.

``jitable`` marks a plain Python function as callable from compiled code on
every target (the walkers' generator and loop, shared by the CPU kernels, the
CUDA kernels and the CUDA simulator).
"""
import hashlib
import os
import pathlib

import numba

#: The package whose sources name the cache.
PACKAGE = pathlib.Path(__file__).resolve().parent


def source_hash(root=PACKAGE, parts=None):
    """A 16-hex-digit hash of the relative paths and bytes of every ``.py`` file under ``root``.

    ``parts``, when given, limits it to the files whose relative path (with
    "/") starts with one of these prefixes, e.g. ``("mlp/", "_numerics.py")``.
    """
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if parts is not None and not rel.startswith(tuple(parts)):
            continue
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def cache_root(environ=None):
    """fastsd's cache folder: ``$XDG_CACHE_HOME/fastsd``, default ``~/.cache/fastsd``.

    Parameters
    ----------
    environ : mapping, optional
        Environment variables (default ``os.environ``).
    """
    environ = os.environ if environ is None else environ
    return os.path.join(environ.get("XDG_CACHE_HOME")
                        or os.path.join(os.path.expanduser("~"), ".cache"), "fastsd")


def cache_dir(environ=None, root=PACKAGE):
    """The folder of the cache for the sources under ``root``.

    Parameters
    ----------
    environ : mapping, optional
        Environment variables (default ``os.environ``): ``NUMBA_CACHE_DIR``,
        ``XDG_CACHE_HOME``.
    root : pathlib.Path, default the fastsd package
    """
    environ = os.environ if environ is None else environ
    base = environ.get("NUMBA_CACHE_DIR") or os.path.join(cache_root(environ), "numba")
    return os.path.join(base, f"fastsd-{source_hash(root)}")


_DIR = cache_dir()


def njit(*args, **options):
    """``numba.njit(cache=True, **options)`` with the cache in ``cache_dir()``.

    Used as ``@njit`` or ``@njit(parallel=True, ...)``, like ``numba.njit``.
    """
    if args and callable(args[0]):
        return njit(**options)(args[0])

    def decorate(fn):
        before = numba.config.CACHE_DIR
        numba.config.CACHE_DIR = _DIR
        try:
            return numba.njit(cache=True, **options)(fn)
        finally:
            numba.config.CACHE_DIR = before
    return decorate


def jitable(fn):
    """Register ``fn`` so that compiled CPU code and Numba-CUDA kernels can call it.

    ``fn`` stays a plain Python function (the CUDA simulator runs it as such)
    and is compiled wherever a compiled caller reaches it: Numba's
    ``register_jitable`` for the CPU target and, where the numba-cuda package
    is installed (its CUDA target has its own registry), numba-cuda's too.
    Without numba-cuda, Numba's built-in CUDA target shares the CPU registry.
    """
    from numba.extending import register_jitable
    register_jitable(fn)
    try:
        from numba.cuda.extending import register_jitable as register_for_cuda
    except Exception:       # no numba-cuda, or the simulator / built-in target without one
        return fn
    register_for_cuda(fn)
    return fn
