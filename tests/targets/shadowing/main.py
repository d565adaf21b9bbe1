"""Imports modules of its own directory named like ones Python or heatline may import, and
shows which it got."""

import argparse
import collections
import datetime
import enum
import functools
import json
import linecache
import locale
import pygments
import random
import re
import rich
import shutil
import signal
import typing

for module in (argparse, collections, datetime, enum, functools, json, linecache, locale,
               pygments, random, re, rich, shutil, signal, typing):
    print(module.__name__, getattr(module, "SENTINEL", "NOT the program's"))
total = 0
for i in range(200000):
    total += i
print(total)
