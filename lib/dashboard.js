// The dashboard mounted in a Node web app: the request goes to the Rust router in-process
// (`DashboardBridge`, the same code as `tideq dashboard`), which asks the app's `authorize` hook
// when it needs an answer. Shared by `tideq/express` and `tideq/fastify`; no dashboard logic here.
'use strict';

const { DashboardBridge } = require('./binding.js');

/**
 * Checks the options and returns `answer(request, hookRequest)`: the dashboard's response to one
 * request (`{ method, prefix, path, query, rawHeaders, body }`), asking
 * `authorize(hookRequest, action)` what the router needs to know.
 */
function bridge(options, what) {
  const { authorize, ...rest } = options ?? {};
  if (typeof authorize !== 'function') {
    throw new TypeError(
      `${what}: authorize must be a function (request, action) => boolean | Promise<boolean>, ` +
        "the app's login deciding who may read ('read') and change ('act') the queues",
    );
  }
  const native = new DashboardBridge(rest);
  return async function answer(request, hookRequest) {
    const asked = { ...request };
    for (;;) {
      const a = await native.handle(asked);
      if (!a.ask) return a;
      asked[a.ask] = Boolean(await authorize(hookRequest, a.ask));
    }
  };
}

/** A URL's path and query string (without `?`; undefined when none). */
function splitUrl(url) {
  const q = url.indexOf('?');
  return q < 0 ? [url, undefined] : [url.slice(0, q), url.slice(q + 1)];
}

module.exports = { bridge, splitUrl };
