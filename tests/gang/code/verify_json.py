"""checkpoint.verify of the multi-node tests: the file loads as JSON (exit 0) or not."""

import json
import sys
from pathlib import Path

json.loads(Path(sys.argv[1]).read_text())
