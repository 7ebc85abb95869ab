"""Whether "spawn" worker processes can start from this process's ``__main__``.

A spawned worker first re-imports its parent's main module (as
``__mp_main__``), as ``multiprocessing.spawn`` decides: by module name after
``python -m``, by file path after ``python script.py``, not at all after
``python -c`` or at an interactive prompt. That fails in two ways:

* the path is no file: ``python - <<EOF`` runs ``<stdin>``;
* the scan is started while the main module runs at import level, outside
  ``if __name__ == "__main__":``: each worker would start it again on
  re-import, which ``multiprocessing`` refuses ("An attempt has been made to
  start a new process before the current process has finished its
  bootstrapping phase"), and every worker dies.

``workers_unavailable`` finds both before any worker starts, so that the
scan can run in this process instead. The second is read off the call
stack: a frame running the main module's top-level code, at a line that the
module's source does not nest under a ``__name__ == "__main__"`` test.
"""
import ast
import os
import sys
import tokenize
from multiprocessing import spawn


def workers_unavailable():
    """Return the one-line warning of a scan that cannot start spawned workers, or None.

    Returns
    -------
    str or None
        Why the workers cannot start (e.g. "the main module is <stdin>,
        which a worker process cannot re-import"), that the scan runs in
        this process instead, and how to get parallel workers.
    """
    reason = _reason()
    if reason is None:
        return None
    return (f"running the scan in this process, without worker processes: {reason}. For "
            "parallel workers, put the code that starts it under `if __name__ == "
            "\"__main__\":` in a script file (or pass `executor=`, e.g. a Dask client); "
            "`executor=\"serial\"` runs it here without this warning.")


def _reason():
    """Why spawned workers cannot start from here, or None."""
    try:
        data = spawn.get_preparation_data("fastsd")
    except RuntimeError:        # this process is itself a spawned worker, importing its main
        return "this process is a worker process still importing its main module"
    name, path = data.get("init_main_from_name"), data.get("init_main_from_path")
    if name is not None and (name == "__main__" or name.endswith(".__main__")):
        return None                     # a package's __main__: workers skip it
    if name is None and path is None:
        return None                     # python -c, or an interactive prompt
    if path is not None and not os.path.isfile(path):
        return (f"the main module is {os.path.basename(path)}, which a worker process cannot "
                "re-import")
    main = sys.modules["__main__"]
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>" and frame.f_globals is main.__dict__:
            source = frame.f_code.co_filename
            if not _guarded(source, frame.f_lineno):
                return (f"{source}, line {frame.f_lineno}, starts the scan while the script is "
                        "imported, and each worker process would import it again")
        frame = frame.f_back
    return None


def _guarded(source, line):
    """True when ``line`` of the file ``source`` is under ``if __name__ == "__main__":``.

    True as well when the source cannot be read or parsed: then the workers
    are left to start as they can.
    """
    try:
        with tokenize.open(source) as fh:
            tree = ast.parse(fh.read(), source)
    except (OSError, SyntaxError, ValueError):
        return True
    return any(_is_main_test(node.test) and node.body[0].lineno <= line <= node.body[-1].end_lineno
               for node in ast.walk(tree) if isinstance(node, ast.If))


def _is_main_test(test):
    """True for ``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    left, right = test.left, test.comparators[0]
    return any(isinstance(a, ast.Name) and a.id == "__name__" and isinstance(b, ast.Constant)
               and b.value == "__main__" for a, b in ((left, right), (right, left)))

