// An Express app with tideq's dashboard mounted under /tideq, behind the app's own login.
//
// The login is a stand-in: GET /login?user=alice sets a `user` cookie (a real app checks a
// password and signs its session); the X-User header works too, for scripts. alice may act, bob
// may only read, anyone else is refused. Run it with
//   TIDEQ_REDIS_URL=redis://127.0.0.1:6379 node examples/express/app.mjs
// and open http://127.0.0.1:3000/login?user=alice. PORT sets the port (0: any free one);
// ALLOWED_HOSTS (comma-separated) the names the dashboard answers besides localhost.
import express from 'express';
import { dashboard } from 'tideq/express';

const USERS = { alice: { admin: true }, bob: { admin: false } };

/** The app's "session": the user named by the `user` cookie or the X-User header. */
function login(req, _res, next) {
  const cookie = /(?:^|;\s*)user=([^;]*)/.exec(req.headers.cookie ?? '')?.[1];
  req.user = USERS[cookie ?? req.get('x-user')];
  next();
}

export function createApp({ url = process.env.TIDEQ_REDIS_URL, allowedHosts } = {}) {
  const app = express();
  app.use(login);
  app.get('/login', (req, res) => {
    res.cookie('user', String(req.query.user), { httpOnly: true, sameSite: 'lax' });
    res.redirect('/tideq/');
  });
  app.use(
    '/tideq',
    dashboard({
      url,
      allowedHosts,
      authorize: (req, action) => Boolean(req.user) && (action === 'read' || req.user.admin),
    }),
  );
  app.get('/', (_req, res) => res.send('the app'));
  return app;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const allowedHosts = (process.env.ALLOWED_HOSTS ?? '').split(',').filter(Boolean);
  const server = createApp({ allowedHosts }).listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
    console.log(`listening on http://127.0.0.1:${server.address().port}`);
  });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
