import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { DashboardMountOptions } from './dashboard';

export type { DashboardAction, DashboardMountOptions } from './dashboard';

/** The plugin's options: the dashboard's, read with the request Fastify gives `authorize`. */
export type FastifyDashboardOptions = DashboardMountOptions<FastifyRequest>;

/** tideq's dashboard as a Fastify plugin:
 * `app.register(dashboard, { prefix: '/tideq', authorize })`. */
export declare const dashboard: FastifyPluginAsync<FastifyDashboardOptions>;
