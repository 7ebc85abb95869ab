"""``python -m fastsd``: the ``fastsd`` command."""
import sys

from .cli import main

sys.exit(main())
