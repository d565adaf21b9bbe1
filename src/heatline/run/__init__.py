"""Running a program under the profiler exactly as python would run it: finding it
(program.py), keeping its modules its own (isolation.py), launching it (launch.py), its
uncaught errors (errors.py), SIGTERM (sigterm.py), heatline's own messages (output.py),
finishing the run (finish.py), and following its child processes (carrier.py, follow.py,
collect.py, _child/). Imports point down: launch -> finish -> collect -> carrier; follow ->
carrier, sigterm, output; nothing here imports cli/ or integrations/."""
