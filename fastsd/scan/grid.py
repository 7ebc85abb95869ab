"""A scan grid: named axes (lists) crossed with fixed settings (scalars)."""
import json
import math
import numbers
from itertools import product

import numpy as np

#: Values that make a setting an axis; anything else is a fixed setting.
AXIS_TYPES = (list, tuple, range, np.ndarray)


def _plain(name, value):
    """Return ``value`` as a JSON-safe Python scalar, or raise naming the setting."""
    if value is None or isinstance(value, (bool, np.bool_, str)):
        return bool(value) if isinstance(value, np.bool_) else value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"`{name}` must be finite; got {value!r}.")
        return value
    raise TypeError(f"`{name}` must be a number, a string, a bool or None, or a list of them "
                    f"(an axis); got {type(value).__name__} {value!r}.")


class Grid:
    """The product of named axes, with fixed settings, as in a scan.

    Every keyword is a setting of the predictor that ``fastsd.scan.run``
    will ask (for "mlp": gamma, L, d, width, steps, seed, sigma2, ...). A
    list, tuple, range or 1-d array makes that setting an axis; any other
    value is fixed for every cell. The cells are the Cartesian product of the
    axes, in the order the axes are given (the last varies fastest).

    Parameters
    ----------
    **settings
        Setting names mapped to a scalar (number, string, bool, None) or a
        non-empty sequence of scalars without repeats. For the "mlp"
        predictor, ``gamma="lazy"`` stands for the paper's
        gamma = 1e-5/sqrt(d).

    Attributes
    ----------
    axes : dict of str to tuple
        The axes, in order.
    fixed : dict
        The fixed settings.

    Raises
    ------
    ValueError
        With no setting; for an empty axis, an axis with a repeated value, a
        non-finite number, or a nested sequence.
    TypeError
        For a value that is not a scalar or a sequence of scalars.

    Examples
    --------
    >>> g = Grid(gamma=[1.0, 0.1], L=[4, 8], seed=[0, 1], d=64, width=256, steps=2000)
    >>> len(g), list(g.axes)
    (8, ['gamma', 'L', 'seed'])
    >>> g.cells()[0]
    ({'gamma': 1.0, 'L': 4, 'seed': 0}, {'d': 64, 'width': 256, 'steps': 2000, \
'gamma': 1.0, 'L': 4, 'seed': 0})
    """

    def __init__(self, **settings):
        if not settings:
            raise ValueError("`Grid` must have at least one setting, e.g. "
                             "Grid(gamma=[0.1, 1.0], L=4, ...); got none.")
        self.axes, self.fixed = {}, {}
        for name, value in settings.items():
            if isinstance(value, AXIS_TYPES):
                if isinstance(value, np.ndarray) and value.ndim != 1:
                    raise ValueError(f"axis `{name}` must be 1-d; got an array of shape "
                                     f"{value.shape}.")
                values = tuple(_plain(name, v) for v in value)
                if not values:
                    raise ValueError(f"axis `{name}` must have at least one value; got an "
                                     f"empty {type(value).__name__}.")
                seen = set()
                for v in values:
                    if (type(v), v) in seen:
                        raise ValueError(f"axis `{name}` must not repeat a value; got {v!r} "
                                         f"twice in {list(values)}.")
                    seen.add((type(v), v))
                self.axes[name] = values
            else:
                self.fixed[name] = _plain(name, value)

    def __len__(self):
        return math.prod(len(v) for v in self.axes.values())

    def __repr__(self):
        parts = [f"{k}={list(v)!r}" for k, v in self.axes.items()]
        parts += [f"{k}={v!r}" for k, v in self.fixed.items()]
        return f"Grid({', '.join(parts)})"

    def __eq__(self, other):
        return (isinstance(other, Grid) and self.axes == other.axes
                and self.fixed == other.fixed)

    def __hash__(self):
        return hash(json.dumps([list(self.axes.items()), sorted(self.fixed.items())]))

    def cells(self):
        """Return the cells as ``(coords, settings)`` pairs.

        Returns
        -------
        list of (dict, dict)
            ``coords`` maps each axis to the cell's value on it; ``settings``
            is the fixed settings updated with ``coords``.
        """
        names = list(self.axes)
        out = []
        for combo in product(*self.axes.values()):
            coords = dict(zip(names, combo))
            out.append((coords, {**self.fixed, **coords}))
        return out

    def signature(self, predictor):
        """Return what identifies the grid's store: predictor, fixed settings and axis names.

        Parameters
        ----------
        predictor : str
            The predictor's name, e.g. "mlp".

        Returns
        -------
        dict
            ``predictor``; ``fixed``, the fixed settings as given (the store
            fills in the predictor's defaults, see ``fastsd.ResultStore.bind``);
            ``axes``, the axis names in the grid's order (the order of the
            dimensions of ``fastsd.scan.load(..., xarray=True)``).

        Notes
        -----
        Two grids may share a store when they have the same predictor and
        every setting fixed in both has the same value; an axis of either grid
        may take any values (e.g. ``seed=0`` first, then ``seed=[0, 1]`` adds
        the seed 1). Another grid is refused by ``fastsd.scan.run``.
        """
        return {"predictor": predictor, "fixed": dict(sorted(self.fixed.items())),
                "axes": list(self.axes)}
