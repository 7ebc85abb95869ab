"""A resumable results store: one JSON record per line, appended atomically.

Each finished scan cell is appended as one complete line with a single
``os.write`` followed by ``fsync``, so a scan killed at any moment (even by
``kill -9``) loses at most the cells still in flight: earlier lines are never
rewritten, and a line torn by the kill is skipped on reading. A rerun asks
``done_keys`` which cells are already there and trains only the others.

A run that writes a store holds its lock (``ResultStore.lock``), so that two
runs never compute the same cells into one file.
"""
import errno
import fcntl
import json
import math
import os
import shlex
import socket
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager

from .exceptions import StoreLockedError


class ResultStore:
    """Records of finished cells in a JSON Lines file.

    Every record is a dict with a ``"key"`` entry naming its cell (see
    ``fastsd.presets.Cell.key``); the file is created on the first write.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.jsonl`` file. Its folder is created on the first write.

    Raises
    ------
    ValueError
        When ``path`` names a folder (an existing one, or ends in a
        separator).

    Examples
    --------
    >>> import os, tempfile
    >>> store = ResultStore(os.path.join(tempfile.mkdtemp(), "scan.jsonl"))
    >>> store.write({"key": "L=4,d=8", "best_test_accuracy": 0.9})
    >>> store.done_keys()
    {'L=4,d=8'}
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        if not self.path.strip():
            raise ValueError(f"`path` of a store must name a file, e.g. 'results/scan.jsonl'; "
                             f"got {self.path!r}.")
        if os.path.isdir(self.path) or self.path.endswith((os.sep, "/")):
            raise ValueError(f"`path` of a store must name a file, e.g. 'results/scan.jsonl'; "
                             f"got {self.path!r}, which is a folder.")

    def __repr__(self):
        return f"ResultStore({self.path!r})"

    def check_writable(self, create=True):
        """Raise now, before anything is computed, if records could not be appended.

        Opens the file for appending (or, when it does not exist yet, creates
        and removes it), as ``write`` will, after making its folder as ``lock``
        does.

        Parameters
        ----------
        create : bool, default True
            False: make nothing, not even the folder (a dry run); then a file
            that does not exist yet is checked by creating and removing a
            temporary file in the nearest folder that exists.

        Raises
        ------
        ValueError
            Naming the file and why it cannot be written (read-only file or
            folder, a file where a folder should be, a read-only file system, ...).
        """
        folder = existing = os.path.dirname(os.path.abspath(self.path))
        try:
            if os.path.exists(self.path):
                os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND))
                return
            while not os.path.exists(existing):
                existing = os.path.dirname(existing)
            if not os.path.isdir(existing):
                raise NotADirectoryError(errno.ENOTDIR, f"{existing} is a file")
            if create:
                os.makedirs(folder, exist_ok=True)
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
                os.remove(self.path)
            else:
                with tempfile.TemporaryFile(dir=existing):
                    pass
        except OSError as exc:
            raise ValueError(f"`store` must be a file that can be written; {self.path!r} "
                             f"cannot be ({exc.strerror or exc}).") from None

    def write(self, record):
        """Append one record as one line, atomically, and flush it to disk.

        If the file ends in a line torn by an earlier kill, the new record
        starts on a fresh line, so the fragment stays an isolated bad line
        that ``load`` skips.

        Parameters
        ----------
        record : dict
            JSON-serialisable, with a ``"key"`` entry.

        Raises
        ------
        ValueError
            When ``record`` has no ``"key"``.
        TypeError
            When ``record`` is not a dict or not JSON-serialisable.
        OSError
            When the file cannot be written in full.
        """
        if not isinstance(record, dict):
            raise TypeError(f"`record` must be a dict; got {type(record).__name__}.")
        if "key" not in record:
            raise ValueError(f"`record` must have a 'key' entry; got keys {sorted(record)}.")
        line = json.dumps(record, sort_keys=True) + "\n"
        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            size = os.fstat(fd).st_size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                line = "\n" + line
            data = line.encode("utf-8")
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {self.path}: {written} of {len(data)} bytes "
                              "(disk full?)")
            os.fsync(fd)
        finally:
            os.close(fd)

    @property
    def grid_path(self):
        """Path of the sidecar file naming the grid the store belongs to."""
        return self.path + ".grid.json"

    def grid_signature(self):
        """Return the signature of the grid bound to the store, or None if unbound."""
        if not os.path.exists(self.grid_path):
            return None
        with open(self.grid_path, encoding="utf-8") as fh:
            try:
                return json.load(fh)
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"`store` must have a readable grid file; got {self.grid_path}, which is not "
                    f"valid JSON ({exc.msg} at line {exc.lineno}); restore it, or delete it to "
                    f"bind the store to the next run's grid.") from None

    def bind(self, signature, defaults=None):
        """Bind the store to a grid signature, or extend the grid it is bound to.

        A setting left out of a signature's fixed settings (and not one of its
        axes) takes its value in ``defaults``, in the stored signature as in
        ``signature``: stating a default is the same as leaving it out. The
        grid is accepted when it has the stored predictor and every setting
        fixed in both grids has the same value; a setting that is an axis of
        either grid may differ. The store is then bound (the sidecar
        ``grid_path`` rewritten atomically) to the union of both grids: the
        stored axes, then this grid's new axes in its order, and the settings
        fixed in both.

        Parameters
        ----------
        signature : dict
            JSON-ready ``predictor``, ``fixed`` and ``axes`` (a list of names
            in the grid's order), e.g. ``fastsd.scan.Grid.signature(predictor)``.
        defaults : dict, optional
            The predictor's default settings, e.g.
            ``fastsd.scan.get_predictor("mlp").defaults``.

        Raises
        ------
        ValueError
            When the store belongs to a grid with another predictor, or with a
            fixed setting of another value; the message names the first
            difference and how to fix it.

        Examples
        --------
        >>> import os, tempfile
        >>> store = ResultStore(os.path.join(tempfile.mkdtemp(), "scan.jsonl"))
        >>> store.bind({"predictor": "mlp", "fixed": {"seed": 0}, "axes": ["L"]})
        >>> store.bind({"predictor": "mlp", "fixed": {}, "axes": ["L", "seed"]})
        >>> store.grid_signature()
        {'axes': ['L', 'seed'], 'fixed': {}, 'predictor': 'mlp'}
        """
        signature, bound = self._merged(signature, defaults)
        if signature != bound:
            self._write_grid(signature)

    def check_binding(self, signature, defaults=None):
        """Return the signature ``bind`` would bind the store to, writing nothing.

        Raises
        ------
        ValueError
            As ``bind``, when the store belongs to a different grid.
        """
        return self._merged(signature, defaults)[0]

    def _merged(self, signature, defaults):
        """(the signature to bind, the one bound now or None), or raise naming a conflict."""
        defaults = _json_ready(defaults or {})
        signature = _with_defaults(_json_ready(signature), defaults)
        bound = self.grid_signature()
        if bound is not None:
            signature = self._union(_with_defaults(bound, defaults), signature)
        return signature, bound

    def _union(self, bound, new):
        """Return the signature of both grids' cells, or raise naming the first conflict."""
        conflict = _first_conflict(bound, new)
        if conflict is not None:
            diff, fix = conflict
            raise ValueError(f"`store` {self.path} belongs to a different grid ({diff}); {fix}"
                             "use another store path for this grid, or delete the store and "
                             f"{self.grid_path} to start over.")
        axes = bound["axes"] + [a for a in new["axes"] if a not in bound["axes"]]
        fixed = {k: v for k, v in bound["fixed"].items() if k in new["fixed"]}
        return {"predictor": bound["predictor"], "fixed": fixed, "axes": axes}

    def _write_grid(self, signature):
        """Write ``signature`` to ``grid_path`` atomically (a temporary file, then a rename)."""
        folder = os.path.dirname(self.path)
        tmp = f"{self.grid_path}.{os.getpid()}.tmp"
        try:
            if folder:
                os.makedirs(folder, exist_ok=True)
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(signature, fh, sort_keys=True, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.grid_path)
        except OSError as exc:
            raise OSError(exc.errno, f"the store {self.path} cannot be written there "
                                     f"({exc.strerror or exc}); choose a writable folder") from None

    @property
    def lock_path(self):
        """Path of the lock file held by the run writing the store."""
        return self.path + ".lock"

    @contextmanager
    def lock(self):
        """Hold the store for one run: a second run on it is refused until this one ends.

        The lock is ``lock_path``, locked with ``flock`` and holding this
        run's pid, host, command line and start time (JSON). The operating
        system releases it when the run ends in any way, ``kill -9``
        included; leaving the block (normally, by an exception, or by Ctrl-C
        or SIGTERM through the ``fastsd`` command) also removes the file. A
        lock file left by a run that was killed is taken over with a
        warning naming that run.

        Raises
        ------
        fastsd.StoreLockedError
            When another run (another process, or another thread of this one)
            holds the store; the message names it and the lock file.
        OSError
            When the lock file cannot be created.

        Examples
        --------
        >>> import os, tempfile
        >>> store = ResultStore(os.path.join(tempfile.mkdtemp(), "scan.jsonl"))
        >>> with store.lock():
        ...     os.path.exists(store.lock_path)
        True
        >>> os.path.exists(store.lock_path)
        False
        """
        fd = _acquire(self.lock_path, self.path)
        try:
            yield
        finally:
            _release(fd, self.lock_path)

    def load(self, lines=False):
        """Return the stored records, in the order they were written.

        Lines that do not parse as a JSON object (a line torn by a kill), or that
        hold a number that is not finite (``NaN``, ``Infinity``, or a literal too
        large for a float, such as ``1e999``: fastsd's records are strict JSON, with
        null for such a number), are skipped with a ``RuntimeWarning`` naming the
        line, so that a scan computes their cells again.

        Parameters
        ----------
        lines : bool, default False
            Return (line number, record) pairs, to name a record's line.

        Returns
        -------
        list of dict, or of (int, dict)
            Empty when the file does not exist yet.
        """
        if not os.path.exists(self.path):
            return []
        records, skipped = [], []
        with open(self.path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line, parse_constant=_no_constant,
                                        parse_float=_finite_float)
                except _NotFinite as exc:
                    skipped.append((number, f"holds {exc}, not a finite number (fastsd "
                                            "writes null there)"))
                    continue
                except json.JSONDecodeError:
                    skipped.append((number, "not JSON: torn by an interrupted write?"))
                    continue
                if not isinstance(record, dict):
                    skipped.append((number, f"a JSON {type(record).__name__}, not an object"))
                    continue
                records.append((number, record) if lines else record)
        if skipped:
            warnings.warn(f"{self.path}: skipped, not records: {skipped_lines(skipped)}",
                          RuntimeWarning, stacklevel=2)
        return records

    def done_keys(self):
        """Return the set of cell keys already stored.

        Returns
        -------
        set of str
        """
        return {r["key"] for r in self.load() if "key" in r}


class _NotFinite(ValueError):
    """A stored number that is not finite: the line is damaged."""


def _no_constant(token):
    raise _NotFinite(token)


def _finite_float(text):
    value = float(text)
    if not math.isfinite(value):
        raise _NotFinite(text)
    return value


def skipped_lines(skipped, shown=3):
    """Which lines and why, for one warning: "line 4: why", "line 4: why; line 7: why", or,
    beyond ``shown`` lines, "lines 4, 7, 9, 12 (line 4: why; ...; ...)".

    ``skipped`` is a list of (line number, reason).
    """
    why = "; ".join(f"line {n}: {reason}" for n, reason in skipped[:shown])
    if len(skipped) <= shown:
        return why
    return f"lines {', '.join(str(n) for n, _ in skipped)} ({why}; ...)"


def _acquire(lock_path, store_path):
    """Lock ``lock_path`` for this run, write who holds it; return its descriptor."""
    folder = os.path.dirname(lock_path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise StoreLockedError(
                f"`store` must not be in use by another run; got {store_path}, which "
                f"{_describe_holder(holder)} is writing (lock file {lock_path}). Wait for that "
                f"run to end or stop it; if it is gone (e.g. its machine crashed), delete "
                f"{lock_path}.") from None
        try:            # the holder may have removed the file between our open and flock
            current = os.stat(lock_path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            current = False
        if current:
            break
        os.close(fd)
    stale = _holder(fd)
    if stale is not None:
        warnings.warn(f"taking over the lock {lock_path} of a run that ended without releasing "
                      f"it: {_describe_holder(stale)}", RuntimeWarning, stacklevel=2)
    me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                     "command": shlex.join(getattr(sys, "orig_argv", sys.argv)),
                     "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    os.ftruncate(fd, 0)
    os.pwrite(fd, me.encode("utf-8"), 0)
    os.fsync(fd)
    return fd


def _release(fd, lock_path):
    """Remove our lock file (unless someone deleted it meanwhile), then unlock it."""
    try:
        if os.stat(lock_path).st_ino == os.fstat(fd).st_ino:
            os.unlink(lock_path)        # still locked: no other run is using the file
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def _holder(fd):
    """The run a lock file names (a dict), or None for an empty or unreadable one."""
    try:
        holder = json.loads(os.pread(fd, 1 << 16, 0).decode("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return holder if isinstance(holder, dict) else None


def _describe_holder(holder):
    if holder is None:
        return "another run (not yet named in its lock file)"
    return (f"pid {holder.get('pid')} on {holder.get('host')} (started {holder.get('started')}, "
            f"command: {holder.get('command')})")


def _json_ready(value):
    """Return ``value`` as JSON gives it back (tuples as lists, keys sorted)."""
    return json.loads(json.dumps(value, sort_keys=True))


def _with_defaults(signature, defaults):
    """Return ``signature`` with ``defaults`` filled into its fixed settings, axes excepted."""
    filled = {k: v for k, v in defaults.items() if k not in signature["axes"]}
    return {**signature, "fixed": {**filled, **signature["fixed"]}}


def _first_conflict(bound, new):
    """Return ``(difference, fix)`` for the first conflict of two signatures, or None.

    The predictors must be equal, and so must the settings fixed in both; a
    setting that is an axis of either grid may differ.
    """
    if bound["predictor"] != new["predictor"]:
        return f"predictor: stored {bound['predictor']!r}, this grid {new['predictor']!r}", ""
    old, cur = bound["fixed"], new["fixed"]
    for name in sorted((set(old) | set(cur)) - set(bound["axes"]) - set(new["axes"])):
        stored, given = old.get(name, "<unset>"), cur.get(name, "<unset>")
        if stored != given:
            diff = f"fixed setting `{name}`: stored {stored!r}, this grid {given!r}"
            if name not in cur:
                return diff, f"give `{name}` as the store's grid does ({name}={stored!r}); or "
            return diff, (f"to add cells with this `{name}` to the store, make it an axis: "
                          f"{name}=[{given!r}]; or ")
    return None
