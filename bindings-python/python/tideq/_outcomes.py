"""What a job handler raises to ask for something else than a failure: ``Snooze``, ``BackOff``
and ``DontRetry`` (the worker hands them to the core as its ``Snooze``, ``BackOff`` and
``DontRetry``)."""

from __future__ import annotations

import datetime
import math
from typing import Union

from tideq._tideq import InvalidArgumentError


def _seconds(delay: Union[float, datetime.timedelta]) -> float:
    if isinstance(delay, datetime.timedelta):
        delay = delay.total_seconds()
    if isinstance(delay, bool) or not isinstance(delay, (int, float)):
        raise TypeError(f"delay must be seconds (a number or a datetime.timedelta), not {type(delay).__name__}")
    secs = float(delay)
    if math.isnan(secs) or math.isinf(secs) or secs < 0:
        raise InvalidArgumentError(f"delay must be a non-negative number of seconds, got {delay}")
    return secs


class Snooze(Exception):
    """Raised by a job handler: run the job again after ``delay`` (seconds, or a ``timedelta``),
    without using an attempt.

    The job's attempts (so the backoff of a later failure) are as if this delivery never happened,
    no error is recorded, and a job may snooze any number of times; ``delay`` 0 makes it ready
    again at once, at the back of its queue. Counted in ``stats().snoozed``, with a ``snoozed``
    event; never as a failure."""

    delay: float
    """Seconds until the job runs again."""

    def __init__(self, delay: Union[float, datetime.timedelta]) -> None:
        self.delay = _seconds(delay)
        super().__init__(f"snoozed for {self.delay} s")

    def __repr__(self) -> str:
        return f"Snooze({self.delay})"


class BackOff(Exception):
    """Raised by a job handler: hold the whole queue, or with ``group=True`` the job's group, for
    ``delay`` seconds (the service it calls said "too many requests").

    Nothing of the queue or group starts until then (the other groups go on), and the job runs
    again after it, first in line, without using an attempt. A later back-off extends the hold, an
    earlier one never shortens it. A job without a group holds the queue. Counted as ``snoozed``."""

    delay: float
    """Seconds the queue or group is held."""
    group: bool
    """True: the job's group is held; False: the whole queue."""

    def __init__(self, delay: Union[float, datetime.timedelta], *, group: bool = False) -> None:
        self.delay = _seconds(delay)
        self.group = bool(group)
        what = "group" if self.group else "queue"
        super().__init__(f"backing off the {what} for {self.delay} s")

    def __repr__(self) -> str:
        return f"BackOff({self.delay}{', group=True' if self.group else ''})"


class DontRetry(Exception):
    """Raised by a job handler: fail the job for good. It is dead-lettered at once with this error
    (``"DontRetry: <message>"``), whatever attempts it has left. Counted as a failure."""
