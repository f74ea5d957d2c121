"""config/wsgi.py, as each gunicorn worker imports it: the views are loaded before the first
request, and what was loaded is frozen out of the cyclic garbage collector's full collections."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.deploy.files import REPO

_PROBE = """
import gc, json, sys
import config.wsgi
print(json.dumps({"frozen": gc.get_freeze_count(), "tracked": len(gc.get_objects()),
                  "views_loaded": "api.views.queue" in sys.modules}))
"""


def test_the_worker_loads_its_views_and_freezes_them_out_of_full_collections():
    env = os.environ | {"DJANGO_SETTINGS_MODULE": "config.settings"}
    out = subprocess.run([sys.executable, "-c", _PROBE], cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    probe = json.loads(out.stdout.strip().splitlines()[-1])
    assert probe["views_loaded"]  # by the URLconf, before any request
    # Django, DRF and the app's modules: tens of thousands of objects no collection walks again
    assert probe["frozen"] > 50_000 and probe["tracked"] < probe["frozen"] / 10
