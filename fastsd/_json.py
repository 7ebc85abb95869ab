"""Strict JSON for records: one conversion used by every result's ``to_record``."""
import math

import numpy as np


def strict_json(x):
    """Return ``x`` as strict-JSON data.

    Dicts (keys made strings), lists, tuples and arrays are converted
    recursively; numpy scalars become Python ones; NaN and inf become None
    (strict JSON has no such numbers); anything else is returned as is.
    """
    if isinstance(x, dict):
        return {str(k): strict_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple, np.ndarray)):
        return [strict_json(v) for v in (x.tolist() if isinstance(x, np.ndarray) else x)]
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return float(x) if math.isfinite(x) else None
    return x
