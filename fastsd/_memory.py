"""Checks that the main allocations of an entry point fit, made before allocating.

An entry point lists what it is about to allocate in proportion to the user's
sizes as ``Need``s (bytes, what for, and the parameter that drives it) and
calls ``check_fits``; when the total exceeds the memory available it raises
``SizeTooLargeError`` naming the parameter of the largest need:

    `width` = 1000000000 needs 29.80 TiB for the hidden weights (1 model x
    1000000000 units x 64 inputs, 32 bytes each), but 20.10 GiB is available;
    use a smaller `width`.

The estimates count the arrays that scale with the sizes (not Python's
overhead), so a refused request could not have run, and one that passes
may still run short when other processes take the memory.
"""
import os
from typing import NamedTuple

from .exceptions import SizeTooLargeError

__all__ = ["Need", "SizeTooLargeError", "available_bytes", "check_fits", "default_max_bytes",
           "fmt_bytes", "need"]


class Need(NamedTuple):
    """One allocation an entry point is about to make.

    Attributes
    ----------
    nbytes : int
        Its size in bytes.
    what : str
        What it holds, with its shape, e.g. "the hidden weights (2 models x ...)".
    name : str
        The parameter that sizes it, e.g. "width".
    value : object
        That parameter's value, shown after "`name` = ".
    fix : str, optional
        The advice; default "use a smaller `name`".
    """

    nbytes: int
    what: str
    name: str
    value: object
    fix: str = None


def need(nbytes, what, *sizes):
    """A ``Need`` of ``nbytes`` for ``what`` that blames the largest of the ``sizes``.

    Each size is (name, value) or (name, value, shown, fix): the parameter,
    its size as a number, how to show it (default the value) and the advice.
    """
    name, value, *rest = max(sizes, key=lambda s: s[1])
    shown = rest[0] if rest else value
    return Need(int(nbytes), what, name, shown, rest[1] if len(rest) > 1 else None)


def available_bytes():
    """Memory available to a new allocation now, in bytes, or None where it cannot be read.

    Linux's MemAvailable (free memory plus the caches the kernel can drop),
    else the free physical pages.
    """
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def default_max_bytes():
    """Half the memory available now, or 4 GiB where that cannot be read."""
    avail = available_bytes()
    return 4 << 30 if avail is None else avail // 2


def fmt_bytes(n):
    """``n`` bytes in a readable unit: "2048 bytes", "12.5 MiB", "190.73 GiB", "1.86 TiB"."""
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30)):
        if n >= 2**shift:
            return f"{n / 2**shift:.2f} {unit}"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n} bytes"


def check_fits(needs, limit=None):
    """Raise ``SizeTooLargeError`` when the ``needs`` together exceed the memory available.

    Parameters
    ----------
    needs : iterable of Need
        What the caller is about to allocate.
    limit : int, optional
        The bytes allowed; default ``available_bytes()`` (no check where that
        cannot be read).

    Raises
    ------
    SizeTooLargeError
        Naming the parameter of the largest need, its value, the bytes needed
        (that need's, and the total when there are others), the bytes
        available and the fix.
    """
    needs = [n for n in needs if n.nbytes > 0]
    limit = available_bytes() if limit is None else limit
    total = sum(int(n.nbytes) for n in needs)
    if limit is None or total <= limit:
        return
    big = max(needs, key=lambda n: n.nbytes)
    rest = f", {fmt_bytes(total)} in all" if fmt_bytes(total) != fmt_bytes(big.nbytes) else ""
    fix = big.fix or f"use a smaller `{big.name}`"
    raise SizeTooLargeError(f"`{big.name}` = {big.value} needs {fmt_bytes(big.nbytes)} for "
                            f"{big.what}{rest}, but {fmt_bytes(limit)} is available; {fix}.")
