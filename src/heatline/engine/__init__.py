"""The engine adapter: the only package that imports the C engine (heatline._native).
session.py starts, pauses, stops and snapshots it; scope.py and opcodes.py compute the tables
it is given; control.py is `heatline ctl`'s file protocol; marked.py the @profile filter of a
snapshot; dump.py reads another process's stacks for `heatline dump`. Above it: the API, the
renderers and run/; below it: data/ and options."""
