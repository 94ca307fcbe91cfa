// tideq's dashboard as Express middleware, behind the app's own login:
//   app.use('/tideq', dashboard({ url, authorize: (req, action) => ... }))
'use strict';

const { bridge, splitUrl } = require('./dashboard.js');

/**
 * The dashboard as Express middleware, to mount with `app.use(prefix, ...)`. `authorize(req,
 * action)` (sync or async) decides every request: `'read'` for the page and its API, `'act'` for
 * changes; false answers 403. Throws `INVALID_ARGUMENT` on a bad option.
 */
function dashboard(options) {
  const answer = bridge(options, 'dashboard(options)');
  return function tideqDashboard(req, res, next) {
    const [full, query] = splitUrl(req.originalUrl ?? req.url);
    const prefix = req.baseUrl ?? '';
    const path = full.startsWith(prefix) ? full.slice(prefix.length) : req.path;
    answer({ method: req.method, prefix, path, query, rawHeaders: req.rawHeaders }, req).then((a) => {
      res.statusCode = a.status;
      for (let i = 0; i + 1 < a.headers.length; i += 2) res.setHeader(a.headers[i], a.headers[i + 1]);
      res.end(a.body);
    }, next);
  };
}

module.exports = { dashboard };
