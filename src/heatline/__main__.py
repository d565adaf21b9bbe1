"""``python -m heatline``: the program runs from this module's own frame, so that it sees as
few of heatline's frames below its own as Python allows (runpy's two and this one). A ``-m``
module, directory or zip archive runs through runpy's ``_run_module_as_main``, called from
here as python calls it, whose frames then lie between this one and the program's."""

from heatline.cli import prepare

_launch = prepare()
if isinstance(_launch, int):
    raise SystemExit(_launch)
try:
    # exec(code, globals) for a script; runpy._run_module_as_main(...) otherwise, as python.
    _launch.main(*_launch.take())
except BaseException as _exc:  # noqa: BLE001 -- Launch.ended handles (or re-raises) it
    raise SystemExit(_launch.ended(_exc)) from None
raise SystemExit(_launch.ended(None))
