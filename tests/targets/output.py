"""Writes text, Unicode, raw bytes and a last line without a newline to stdout."""

import sys

print("hello from the program")
print("unicode: \u00e9\u00e8 \u2603 \U0001f600")
sys.stdout.write("no newline yet... ")
sys.stdout.flush()
sys.stdout.buffer.write(b"raw bytes \x00\x01\xfe\xff\n")
sys.stdout.buffer.flush()
for i in range(200):
    print(i, end=" " if i % 20 else "\n")
sys.stdout.write("last line, no newline")
