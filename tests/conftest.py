from __future__ import annotations

import os
import sys
from pathlib import Path

# Tests run against the checkout, installed or not.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# The release tests use more releases than a user's default cache keeps (8); with the default
# bound every run would evict some and download them again.
os.environ.setdefault("EAGLE3LINT_MAX_RELEASES", "24")
