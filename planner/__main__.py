"""`python -m planner`."""

import sys

from planner.cli import console

sys.exit(console())
