"""`python -m planner`."""

import sys

from planner.cli.main import console

sys.exit(console())
