"""Starts another Python interpreter (argv[1]: one heatline cannot profile, such as 2.7) with
a sitecustomize of the program's own on PYTHONPATH (argv[2]), through subprocess with an
explicit environment, with the inherited one, and by name through PATH. The child prints the
environment and sys.path it got."""

import os
import subprocess
import sys

interpreter, site_dir = sys.argv[1], sys.argv[2]
CODE = (
    "import os, sys; "
    "print(sorted(k for k in os.environ if 'HEATLINE' in k or k == 'PYTHONPATH')); "
    "print(os.environ.get('PYTHONPATH')); "
    "print([p for p in sys.path if 'heatline' in p or 'site_dir' in p])"
)
subprocess.run([interpreter, "-c", CODE], env=dict(os.environ, PYTHONPATH=site_dir),
               check=True)
os.environ["PYTHONPATH"] = site_dir
subprocess.run([interpreter, "-c", CODE], check=True)
os.environ["PATH"] = os.path.dirname(interpreter) + os.pathsep + os.environ["PATH"]
subprocess.run([os.path.basename(interpreter), "-c", CODE], check=True)
