"""``python -m heatline``: the program is started from this module's own frame, on a fresh frame
stack (engine/session.py, fresh_stack_main): none of heatline's frames, nor runpy's that run this
module, lie below the program's. A ``-m`` module, directory or zip archive runs through runpy's
``_run_module_as_main``, called as python calls it, whose frames are then the bottom ones."""

from heatline.cli import prepare

_launch = prepare()
if isinstance(_launch, int):
    raise SystemExit(_launch)
try:
    # The script's code, or runpy._run_module_as_main(...), run as python runs them.
    _launch.main(*_launch.take())
except BaseException as _exc:  # noqa: BLE001 -- Launch.ended handles (or re-raises) it
    raise SystemExit(_launch.ended(_exc)) from None
raise SystemExit(_launch.ended(None))
