// tideq/express and tideq/fastify under `tsc --strict` (compiled with api.ts, never run): the
// options and the authorize hook's request and action are typed by each framework.
import express from 'express';
import Fastify from 'fastify';
import { dashboard as expressDashboard, type DashboardAction } from 'tideq/express';
import { dashboard as fastifyDashboard } from 'tideq/fastify';

const app = express();
app.use(
  '/tideq',
  expressDashboard({
    url: 'redis://127.0.0.1:6379',
    authorize: (req, action: DashboardAction) => req.get('x-user') === 'alice' || action === 'read',
  }),
);
app.use('/ops', expressDashboard({ authorize: async () => true, allowedHosts: ['queues.example.com'], refreshMs: 5000 }));
// @ts-expect-error authorize is required
expressDashboard({ url: 'redis://127.0.0.1:6379' });
// @ts-expect-error the action is 'read' or 'act'
expressDashboard({ authorize: (_req, action) => action === 'write' });
// @ts-expect-error an unknown option
expressDashboard({ authorize: () => true, refresh: 5 });

const f = Fastify();
void f.register(fastifyDashboard, {
  prefix: '/tideq',
  authorize: (request, action) => request.headers['x-user'] === 'alice' || action === 'read',
});
