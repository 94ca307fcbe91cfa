// tideq's dashboard as a Fastify plugin, behind the app's own login:
//   app.register(dashboard, { prefix: '/tideq', url, authorize: (request, action) => ... })
'use strict';

const { bridge, splitUrl } = require('./dashboard.js');

/**
 * The dashboard as a Fastify plugin: register it with a `prefix` and its options. `authorize(request,
 * action)` (sync or async) decides every request: `'read'` for the page and its API, `'act'` for
 * changes; false answers 403. Rejects with `INVALID_ARGUMENT` on a bad option.
 */
async function dashboard(fastify, options) {
  const { prefix: _prefix, logLevel: _logLevel, ...rest } = options ?? {};
  const answer = bridge(rest, 'register(dashboard, options)');
  const prefix = fastify.prefix;
  // The dashboard's requests carry no body worth parsing: take any as bytes.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));
  async function handler(request, reply) {
    const [full, query] = splitUrl(request.raw.url);
    const path = full.startsWith(prefix) ? full.slice(prefix.length) : full;
    const body = Buffer.isBuffer(request.body) ? request.body : undefined;
    const raw = request.raw.rawHeaders;
    const a = await answer({ method: request.method, prefix, path, query, rawHeaders: raw, body }, request);
    reply.code(a.status);
    for (let i = 0; i + 1 < a.headers.length; i += 2) reply.header(a.headers[i], a.headers[i + 1]);
    return reply.send(a.body);
  }
  fastify.route({ method: ['GET', 'POST'], url: '/', handler });
  fastify.route({ method: ['GET', 'POST'], url: '/*', handler });
}

module.exports = { dashboard };
