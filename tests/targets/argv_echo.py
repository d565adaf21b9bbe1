"""Prints its arguments as bytes, the way the operating system gave them."""

import os
import sys

print([os.fsencode(arg).hex() for arg in sys.argv[1:]])
