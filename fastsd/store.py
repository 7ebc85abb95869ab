"""A resumable results store: one JSON record per line, appended atomically.

Each finished scan cell is appended as one complete line with a single
``os.write`` followed by ``fsync``, so a scan killed at any moment (even by
``kill -9``) loses at most the cells still in flight: earlier lines are never
rewritten, and a line torn by the kill is skipped on reading. A rerun asks
``done_keys`` which cells are already there and trains only the others.
"""
import json
import os
import warnings


class ResultStore:
    """Records of finished cells in a JSON Lines file.

    Every record is a dict with a ``"key"`` entry naming its cell (see
    ``fastsd.presets.Cell.key``); the file is created on the first write.

    Parameters
    ----------
    path : str or os.PathLike
        The ``.jsonl`` file. Its folder is created on the first write.

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

    def __repr__(self):
        return f"ResultStore({self.path!r})"

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
            return json.load(fh)

    def bind(self, signature):
        """Bind the store to a grid signature, or check that it is bound to this one.

        Parameters
        ----------
        signature : dict
            JSON-ready, e.g. ``fastsd.scan.Grid.signature(predictor)``.

        Raises
        ------
        ValueError
            When the store already belongs to a grid with another signature;
            the message names the first difference.
        """
        signature = json.loads(json.dumps(signature, sort_keys=True))
        bound = self.grid_signature()
        if bound is None:
            folder = os.path.dirname(self.path)
            if folder:
                os.makedirs(folder, exist_ok=True)
            tmp = f"{self.grid_path}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump(signature, fh, sort_keys=True, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, self.grid_path)
            return
        if bound != signature:
            diff = _first_difference(bound, signature)
            raise ValueError(f"`store` {self.path} belongs to a different grid ({diff}); use "
                             "another store path for this grid, or delete the store and "
                             f"{self.grid_path} to start over.")

    def load(self):
        """Return the stored records, in the order they were written.

        Lines that do not parse as a JSON object (a line torn by a kill) are
        skipped with a ``RuntimeWarning`` naming the line.

        Returns
        -------
        list of dict
            Empty when the file does not exist yet.
        """
        if not os.path.exists(self.path):
            return []
        records = []
        with open(self.path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    record = None
                if not isinstance(record, dict):
                    warnings.warn(f"{self.path}:{number}: skipping an incomplete record (a line "
                                  "torn by an interrupted write)", RuntimeWarning, stacklevel=2)
                    continue
                records.append(record)
        return records

    def done_keys(self):
        """Return the set of cell keys already stored.

        Returns
        -------
        set of str
        """
        return {r["key"] for r in self.load() if "key" in r}


def _first_difference(bound, new):
    for part in ("predictor", "axes"):
        if bound.get(part) != new.get(part):
            return f"{part}: stored {bound.get(part)!r}, this grid {new.get(part)!r}"
    old, cur = bound.get("fixed", {}), new.get("fixed", {})
    for name in sorted(set(old) | set(cur)):
        if old.get(name, "<unset>") != cur.get(name, "<unset>"):
            return (f"fixed setting `{name}`: stored {old.get(name, '<unset>')!r}, this grid "
                    f"{cur.get(name, '<unset>')!r}")
    return "signature differs"
