"""``python -m hogwild.cli``: the same as the ``hogwild`` command."""
import sys

from hogwild.cli import main

sys.exit(main())
