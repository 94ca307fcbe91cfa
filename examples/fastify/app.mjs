// A Fastify app with tideq's dashboard registered under /tideq, behind the app's own login.
//
// The login is a stand-in: the X-User header (a real app reads its session). alice may act, bob
// may only read, anyone else is refused. Run it with
//   TIDEQ_REDIS_URL=redis://127.0.0.1:6379 node examples/fastify/app.mjs
// and open http://127.0.0.1:3000/tideq/ with the header. PORT sets the port (0: any free one);
// ALLOWED_HOSTS (comma-separated) the names the dashboard answers besides localhost.
import Fastify from 'fastify';
import { dashboard } from 'tideq/fastify';

const USERS = { alice: { admin: true }, bob: { admin: false } };

export async function createApp({ url = process.env.TIDEQ_REDIS_URL, allowedHosts } = {}) {
  const app = Fastify();
  app.decorateRequest('user', null);
  app.addHook('onRequest', async (request) => {
    request.user = USERS[request.headers['x-user']] ?? null;
  });
  await app.register(dashboard, {
    prefix: '/tideq',
    url,
    allowedHosts,
    authorize: (request, action) => Boolean(request.user) && (action === 'read' || request.user.admin),
  });
  app.get('/', async () => 'the app');
  return app;
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const allowedHosts = (process.env.ALLOWED_HOSTS ?? '').split(',').filter(Boolean);
  const app = await createApp({ allowedHosts });
  const address = await app.listen({ port: Number(process.env.PORT ?? 3000), host: '127.0.0.1' });
  console.log(`listening on ${address}`);
  const stop = () => app.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
