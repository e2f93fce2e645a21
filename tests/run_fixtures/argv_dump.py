"""Test program: writes the arguments it received, as JSON, to the file named first."""

import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
out.parent.mkdir(parents=True, exist_ok=True)
out.write_text(json.dumps(sys.argv[2:]))
