"""Running a program under the profiler exactly as python would run it: finding it
(program.py), keeping its modules its own (isolation.py), launching it (launch.py), its
uncaught errors (errors.py), SIGTERM (sigterm.py), heatline's own messages (output.py),
finishing the run (finish.py), following its child processes (carrier.py, follow.py,
collect.py, _child/), and an exec of the program itself (handover.py). Imports point down:
launch -> handover, finish -> collect -> carrier; handover -> follow -> carrier, sigterm,
output; nothing here imports cli/ or integrations/."""
