// What a job handler throws to ask for something else than a failure: `Snooze`, `BackOff` and
// `DontRetry` (the core's `tideq::Snooze`, `tideq::BackOff`, `tideq::DontRetry`). The native
// worker reads a thrown value's `tideqVerdict` (on the JS thread, only when a handler failed);
// plain errors have none.
'use strict';

/** A delay in ms, checked as the core checks arguments (code `INVALID_ARGUMENT`). */
function delayMs(value) {
  if (typeof value !== 'number') {
    const e = new TypeError(`delayMs must be a number of ms, not ${value === null ? 'null' : typeof value}`);
    e.code = 'INVALID_ARGUMENT';
    throw e;
  }
  if (!Number.isFinite(value) || value < 0) {
    const e = new Error(`delayMs must be a non-negative number of ms, got ${value}`);
    e.code = 'INVALID_ARGUMENT';
    throw e;
  }
  return Math.ceil(value);
}

class Snooze extends Error {
  constructor(delayMs_) {
    const ms = delayMs(delayMs_);
    super(`snoozed for ${ms} ms`);
    this.name = 'Snooze';
    this.delayMs = ms;
  }

  get tideqVerdict() {
    return `snooze ${this.delayMs}`;
  }
}

/** Thrown by `Limiter.acquire` when limiter `limiter` is over its limit: a `Snooze` of the wait. */
class OverLimit extends Snooze {
  constructor(limiter, delayMs_) {
    super(delayMs_);
    this.name = 'OverLimit';
    this.limiter = String(limiter);
    this.message = `limiter ${JSON.stringify(this.limiter)} is over its limit; retry after ${this.delayMs} ms`;
  }
}

class BackOff extends Error {
  constructor(delayMs_, options) {
    const ms = delayMs(delayMs_);
    const group = Boolean(options && options.group);
    super(`backing off the ${group ? 'group' : 'queue'} for ${ms} ms`);
    this.name = 'BackOff';
    this.delayMs = ms;
    this.group = group;
  }

  get tideqVerdict() {
    return `${this.group ? 'group' : 'queue'} ${this.delayMs}`;
  }
}

class DontRetry extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'DontRetry';
  }

  get tideqVerdict() {
    return 'dontretry';
  }
}

module.exports = { Snooze, BackOff, DontRetry, OverLimit };
