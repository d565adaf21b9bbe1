"""Run as `-m hlpkg`: exits with the status given as the first argument."""

import sys

print("hlpkg main", sys.argv[1:])
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
