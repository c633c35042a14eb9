"""``python -m hogwild.cli``: the same as the ``hogwild`` command, whose start-up
guard hogwild/__init__.py installed as runpy imported the package."""
import sys

from hogwild_launcher import main

sys.exit(main())
