"""How long a browser test waits for a page condition before it fails.

Generous on purpose: tests wait for conditions, never for a time, and a busy CI machine (load
average 8 and more on 2 cores) took over 15 s to load a first page. REJUDGE_BROWSER_TIMEOUT_MS
changes it."""
from __future__ import annotations

import os

WAIT_MS = float(os.environ.get("REJUDGE_BROWSER_TIMEOUT_MS", "60000"))
