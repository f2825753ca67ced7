from __future__ import annotations

import sys
from pathlib import Path

# Tests run against the checkout, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
