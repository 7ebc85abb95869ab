"""Measurements on trained networks."""
import numpy as np

from ._validation import check_array


def activation_change(result, x):
    """Learning richness as relative activation change (App. F, Fig. F1).

    mean |w_i(T) . x - w_i(0) . x| / mean |w_i(0) . x|, both means over the
    test inputs and the hidden units. Rich training moves the preactivations
    by a large fraction of their initial size; lazy training barely moves them.

    Parameters
    ----------
    result : TrainResult
        A trained model (its ``initial_params`` and ``final_params`` are used).
    x : array_like, shape (n, p)
        Test inputs, e.g. ``task.sample_test(n)[0]``.

    Returns
    -------
    float
        The ratio; 0 for a model that has not moved.

    Raises
    ------
    ValueError
        When ``x`` has the wrong shape or contains NaN or inf, or when every
        initial preactivation is zero.
    """
    w0 = result.initial_params.w
    x = check_array("x", x, shape=(None, w0.shape[1]))
    dw = result.final_params.w - w0
    initial = np.mean(np.abs(x @ w0.T))
    if initial == 0:
        raise ValueError("`x` must give non-zero initial preactivations; got all zero.")
    return float(np.mean(np.abs(x @ dw.T)) / initial)
