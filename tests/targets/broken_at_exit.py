"""Breaks heatline's report (the renderer cannot be imported) and exits with status 5."""

import sys

sys.modules["heatline.renderers.terminal"] = None
sys.exit(5)
