"""What the reader asked to see of a profile (:class:`View`), given to every format's renderer;
importable as ``heatline.renderers.View`` (the package imports this module on first use)."""

from __future__ import annotations

from collections import namedtuple

from heatline.options import DEFAULT_THRESHOLD_PCT

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class View(namedtuple("View", "reduced threshold_pct malloc_threshold",
                      defaults=(False, DEFAULT_THRESHOLD_PCT, 1))):
    """What the reader asked to see (the report options: --reduced-profile,
    --cpu-percent-threshold, --malloc-threshold). The data formats ignore what they do not
    show; every format gets the same View. (A collections.namedtuple: typing's NamedTuple
    would import typing on every run's path.)"""

    __slots__ = ()

    @classmethod
    def of(cls, options: Any) -> View:
        """The View that run or view options (anything with those attributes) ask for."""
        return cls(options.reduced_profile, options.threshold_pct,
                   options.malloc_threshold)
