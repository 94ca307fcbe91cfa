/** What a request to the mounted dashboard asks: see the page and read the queues (`'read'`), or
 * change something: requeue, retry, cancel or delete jobs, purge dead letters, pause or resume
 * queues (`'act'`). */
export type DashboardAction = 'read' | 'act';

/** Options of the mounted dashboard; `Req` is the framework's request type. */
export interface DashboardMountOptions<Req> {
  /** Decides every request with the app's own login: `'read'` for the page and its API, `'act'`
   * for changes (the overview also asks `'act'`, to show actions only to whom may use them);
   * false answers 403. */
  authorize: (request: Req, action: DashboardAction) => boolean | Promise<boolean>;
  /** Redis: a `redis://` URL (default `process.env.TIDEQ_REDIS_URL`, else
   * `redis://127.0.0.1:6379`); or give `client`. */
  url?: string;
  /** A tideq `Client` to use instead of `url`. */
  client?: object;
  /** Only these job queues (default: every queue under the client's prefix). */
  queues?: string[];
  /** The named queues' shard count (default: the count each recorded). */
  shards?: number;
  /** Milliseconds between reads of the queues. Default 10000. */
  refreshMs?: number;
  /** Refuse every change (the page shows no actions). Default false. */
  readOnly?: boolean;
  /** The `Host` names answered besides loopback ones, without scheme or port
   * (`['queues.example.com']`), or `['*']` when the app or its proxy checks `Host` itself.
   * Default: loopback names only, against DNS rebinding. */
  allowedHosts?: string[];
}
