"""``python -m oasis.cli``: the ``oasis`` command."""

import sys

from oasis.cli import main

sys.exit(main())
