"""Test program: one line in <checkpoint folder>/starts.jsonl with the tracking variables
it was started with, then exit 0."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

from tests.hooks_scripts.common import trace

trace(start=0)
