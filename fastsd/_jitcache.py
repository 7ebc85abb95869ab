"""How fastsd compiles: Numba's on-disk cache keyed on a kernel's sources, and ``jitable``.

Numba checks only the stamp of the file that defines a cached function. A
kernel that compiles code from another file (the walkers compile their
reference's generator, the MLP and pair-kernel builds inline
``fastsd._numerics``) would load stale machine code after that other file
changed, until someone cleared ``__pycache__`` by hand. ``njit`` here is
``numba.njit(cache=True)`` with the cache in a folder named by a hash of the
sources the kernel's module can compile from: the module and every fastsd
module it imports, directly or through others (``import_closure``; imports
inside functions count too). An edit of any of them compiles afresh and
nothing stale is ever loaded; an edit elsewhere (the CLI, the scans, the
docs' examples) leaves the compiled kernels in place. The folder sits under
``NUMBA_CACHE_DIR`` when that is set, else in ``numba/`` under fastsd's cache
root, ``cache_root()``: ``$XDG_CACHE_HOME/fastsd`` (default ``~/.cache/fastsd``),
where the measured cost model of the training paths (``fastsd.mlp.costs``) is
kept too. Only fastsd's own kernels go there: the setting is held while each of
them is decorated, then restored.

``jitable`` marks a plain Python function as callable from compiled code on
every target (the walkers' generator and loop, shared by the CPU kernels, the
CUDA kernels and the CUDA simulator).
"""
import ast
import functools
import hashlib
import inspect
import os
import pathlib

import numba

#: The package whose sources name the cache.
PACKAGE = pathlib.Path(__file__).resolve().parent


def source_hash(root=PACKAGE, parts=None, files=None):
    """A 16-hex-digit hash of the relative paths and bytes of every ``.py`` file under ``root``.

    ``parts``, when given, limits it to the files whose relative path (with
    "/") starts with one of these prefixes, e.g. ``("mlp/", "_numerics.py")``;
    ``files``, when given, to those paths.
    """
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")) if files is None else sorted(files):
        rel = path.relative_to(root).as_posix()
        if parts is not None and not rel.startswith(tuple(parts)):
            continue
        h.update(rel.encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _module_file(root, parts):
    """The file of module ``parts`` (names below ``root``), or None."""
    base = root.joinpath(*parts)
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if parts and path.is_file():
            return path
    return root / "__init__.py" if not parts else None


def _imports(path, root):
    """The files under ``root`` that the module at ``path`` imports, at any depth of its code."""
    package = path.relative_to(root).parts[:-1]     # an __init__.py's is its own folder
    found = set()
    for node in ast.walk(ast.parse(path.read_bytes())):
        if isinstance(node, ast.Import):
            targets = [a.name.split(".")[1:] for a in node.names
                       if a.name.split(".")[0] == root.name]
            found.update(f for t in targets for f in (_module_file(root, t),) if f)
        elif isinstance(node, ast.ImportFrom):
            names = (node.module or "").split(".") if node.module else []
            if node.level:
                if node.level - 1 > len(package):
                    continue
                base = list(package[:len(package) - (node.level - 1)]) + names
            elif names and names[0] == root.name:
                base = names[1:]
            else:
                continue
            subs = [_module_file(root, base + [a.name]) for a in node.names]
            found.update(f for f in subs if f)
            if not all(subs):           # a name of the module itself, not a submodule
                found.add(_module_file(root, base))
    found.discard(None)
    return found


def import_closure(path, root=PACKAGE):
    """The ``.py`` files under ``root`` whose code the module at ``path`` can compile from:
    itself and every module of ``root`` it imports, directly or through others.

    ``from package import name`` counts the submodule ``name`` where there is one, else the
    package's ``__init__.py``. The files are read, not imported.
    """
    path, root = pathlib.Path(path).resolve(), pathlib.Path(root).resolve()
    seen, todo = set(), [path]
    while todo:
        p = todo.pop()
        if p not in seen:
            seen.add(p)
            todo += _imports(p, root) - seen
    return seen


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


def cache_dir(environ=None, root=PACKAGE, module=None):
    """The folder of the cache for the kernels of ``module``.

    Parameters
    ----------
    environ : mapping, optional
        Environment variables (default ``os.environ``): ``NUMBA_CACHE_DIR``,
        ``XDG_CACHE_HOME``.
    root : pathlib.Path, default the fastsd package
    module : path, optional
        The file defining the kernels: the folder is named by the hash of its
        ``import_closure``. Default, or a file outside ``root``: every source file
        under ``root``.
    """
    environ = os.environ if environ is None else environ
    base = environ.get("NUMBA_CACHE_DIR") or os.path.join(cache_root(environ), "numba")
    files = None
    if module is not None and pathlib.Path(module).resolve().is_relative_to(root.resolve()):
        files = import_closure(module, root)
    return os.path.join(base, f"fastsd-{source_hash(root, files=files)}")


@functools.lru_cache(maxsize=None)
def _dir_of(module):
    return cache_dir(module=module)


def njit(*args, **options):
    """``numba.njit(cache=True, **options)`` with the cache in ``cache_dir()`` of the
    function's module.

    Used as ``@njit`` or ``@njit(parallel=True, ...)``, like ``numba.njit``.
    """
    if args and callable(args[0]):
        return njit(**options)(args[0])

    def decorate(fn):
        return _cached(fn, _dir_of(inspect.getsourcefile(fn)), options)
    return decorate


def _cached(fn, folder, options):
    """``numba.njit(cache=True, **options)(fn)`` with its cache in ``folder``: Numba's cache
    setting is held while ``fn`` is decorated, then restored (a user's own kernels keep
    theirs)."""
    before = numba.config.CACHE_DIR
    numba.config.CACHE_DIR = folder
    try:
        return numba.njit(cache=True, **options)(fn)
    finally:
        numba.config.CACHE_DIR = before


def instantiate(templates, namespace, bindings, variant, jit=None):
    """Compile plain-Python ``templates`` once more, with ``bindings`` among their globals.

    A family of kernels written once and compiled per variant (the MLP kernels per
    activation, ``fastsd.mlp._cpu_kernels.kernels``): each template is a function of the
    module whose globals are ``namespace``, whose code calls names that ``bindings`` gives
    (compiled functions). The templates are compiled in order, each as
    ``numba.njit(**options)`` (or ``jit``), and bound under its name for those after it, so a
    template may call an earlier one.

    Parameters
    ----------
    templates : list of (function, dict)
        Each plain function and its ``numba.njit`` options.
    namespace : dict
        The globals of the templates' module.
    bindings : dict
        Names the templates call, with what they are in this variant.
    variant : str or None
        The name of the variant's cache folder, under the templates' module's
        ``cache_dir``: it must name what ``bindings`` compile (their sources); None: not
        cached (compiled in each process).
    jit : callable, optional
        ``jit(function)`` compiles each template for another target in place of
        ``numba.njit(**options)`` (the options unused, nothing cached), e.g.
        ``numba.cuda.jit(device=True)`` for the CUDA kernels' hidden units
        (``fastsd.mlp._cpu_kernels.unit_functions``).

    Returns
    -------
    dict
        The compiled templates by name.
    """
    import types

    scope = {**namespace, **bindings}
    # Each variant's functions under names of their own: compiled code calls a function by a
    # symbol formed from its name, and two variants' symbols of one name, loaded from the
    # cache into one process, would resolve to one of them.
    suffix = "".join(ch if ch.isalnum() else "_" for ch in variant or f"nocache{id(scope)}")
    out = {}
    for fn, options in templates:
        f = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__)
        f.__qualname__ = f"{fn.__qualname__}__{suffix}"
        f.__doc__, f.__module__ = fn.__doc__, fn.__module__
        if jit is not None:
            compiled = jit(f)
        elif variant is None:
            compiled = numba.njit(**options)(f)
        else:
            compiled = _cached(f, os.path.join(_dir_of(inspect.getsourcefile(fn)), variant),
                               options)
        scope[fn.__name__] = out[fn.__name__] = compiled
    return out


def variant_name(name, *functions):
    """A cache folder name for a variant of ``instantiate`` that compiles ``functions``:
    ``name`` and a hash of the files that define them and of the values they close over;
    None where one has no source file (a function typed at a prompt: not cached)."""
    h = hashlib.sha256(name.encode())
    for fn in functions:
        try:
            h.update(pathlib.Path(inspect.getsourcefile(fn)).read_bytes())
        except (TypeError, OSError):
            return None
        h.update(fn.__qualname__.encode())
        h.update(repr([c.cell_contents for c in fn.__closure__ or ()]).encode())
    return f"{name}-{h.hexdigest()[:16]}"


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
