"""Run as `-m hlpkg.report ARGS`: prints how it sees itself; must match python -m."""

import json
import sys

print(
    json.dumps(
        {
            "__name__": __name__,
            "__file__": __file__,
            "__package__": __package__,
            "__spec__": __spec__.name,
            "argv": sys.argv,
            "path0": sys.path[0],
        },
        indent=1,
    )
)
