"""``python -m heatline``: the program runs from this module's own frame, so that it sees as
few of heatline's frames below its own as Python allows (runpy's two and this one)."""

from heatline.cli import prepare

_launch = prepare()
if isinstance(_launch, int):
    raise SystemExit(_launch)
try:
    exec(*_launch.take())  # noqa: S102 -- running the program is the point
except BaseException as _exc:  # noqa: BLE001 -- Launch.ended handles (or re-raises) it
    raise SystemExit(_launch.ended(_exc)) from None
raise SystemExit(0)
