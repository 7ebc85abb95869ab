"""Test-wide settings.

CUDA kernels run on Numba's CPU simulator in the normal suite, so that they
are tested on machines without a GPU. On a GPU machine, run the suite with
``NUMBA_ENABLE_CUDASIM=0`` to test them on the device instead. This must be
set before Numba is first imported, hence here.
"""
import os

os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
