"""Copies stdin to stdout byte for byte."""

import sys

sys.stdout.buffer.write(sys.stdin.buffer.read())
