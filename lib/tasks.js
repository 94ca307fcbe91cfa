// Typed tasks: `defineTasks(handlers)` and `queue.typed()`. Both exist for TypeScript (the types
// are in index.d.ts: `TaskSpec`, `TypedQueue`, ...) and cost nothing at run time: `defineTasks`
// returns its argument once it checked that it is an object of functions, `typed()` returns
// the queue itself.
'use strict';

/** A `TypeError` with the core's code for a bad argument. */
function invalid(message) {
  const e = new TypeError(message);
  e.code = 'INVALID_ARGUMENT';
  return e;
}

/** What `value` is, for an error message. */
function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'function' ? 'a function' : typeof value;
}

/** Throws unless `tasks` is a plain object of task handlers (functions) by name. */
function checkTasks(what, tasks) {
  if (tasks === null || typeof tasks !== 'object' || Array.isArray(tasks)) {
    throw invalid(`${what} takes an object of task handlers by name ({ 'send-email': async (args, job) => ... }), not ${describe(tasks)}`);
  }
  for (const [name, handler] of Object.entries(tasks)) {
    if (typeof handler !== 'function') throw invalid(`${what}: the handler of task "${name}" must be a function, not ${describe(handler)}`);
  }
}

/** Task handlers by name, returned as they are (their types are the queue's task spec). */
function defineTasks(tasks) {
  checkTasks('defineTasks', tasks);
  return tasks;
}

/** Adds `typed()` to `Queue`: the queue itself, typed by its tasks. */
function install(Queue) {
  Object.defineProperty(Queue.prototype, 'typed', {
    value: function typed(tasks) {
      if (tasks !== undefined) checkTasks('typed', tasks);
      return this;
    },
    writable: true,
    configurable: true,
  });
}

module.exports = { defineTasks, install, checkTasks };
