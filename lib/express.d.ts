import type { Request, RequestHandler } from 'express';
import type { DashboardMountOptions } from './dashboard';

export type { DashboardAction, DashboardMountOptions } from './dashboard';

/** tideq's dashboard as Express middleware: `app.use('/tideq', dashboard({ authorize }))`.
 * Throws `INVALID_ARGUMENT` on a bad option, `TypeError` without `authorize`. */
export declare function dashboard(options: DashboardMountOptions<Request>): RequestHandler;
