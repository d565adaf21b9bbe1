"""The profile itself, as JSON: the source of truth every other view is made from
(docs/profile-format.md); the one encoding is data/io.py's."""

from __future__ import annotations


from heatline.data.io import encode
from heatline.data.summary import summarise

# typing only for type checkers: a run's path imports none (heatline/__init__.py).
TYPE_CHECKING = False
if TYPE_CHECKING:  # annotations only: importing typing costs every run about 4 ms
    from typing import Any
    from heatline.data.model import Profile


def render(profile: Profile, view: Any = None) -> bytes:
    """The profile file's bytes; ``view`` does not apply (the file keeps every figure). The
    summary is worked out again, as the terminal and HTML reports do, so `heatline view
    --format json` of a profile written without one (or by an older heatline) has the summary
    the other views show."""
    return encode({**profile, "summary": summarise(profile)})
