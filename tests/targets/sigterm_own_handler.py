"""Installs its own SIGTERM handler (after setting and resetting it), which exits with 7."""

import signal
import sys


def on_term(signum, frame):
    print("handler ran for", signum)
    sys.exit(7)


print("first:", signal.signal(signal.SIGTERM, on_term) is signal.SIG_DFL)
print("back:", signal.signal(signal.SIGTERM, signal.SIG_DFL) is on_term)
print("default:", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
print("again:", signal.signal(signal.SIGTERM, on_term) is signal.SIG_DFL)
print("installed:", signal.getsignal(signal.SIGTERM) is on_term)
print("ready", flush=True)
while True:
    pass
