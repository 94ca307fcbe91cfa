// The long variant of the SIGKILL scenario (worker_chaos.mjs): a child killed every second for
// 30 s while 20,000 jobs run. Runs only with TIDEQ_LONG_TESTS=1 (`make workers-long`).
import { test } from 'node:test';

import { useRedis } from './harness.mjs';
import { chaos } from './worker_chaos.mjs';

const redis = useRedis();

test('SIGKILL of a child every second for 30 s while 20,000 jobs run: every job completes, none twice at once, two children again', { skip: !process.env.TIDEQ_LONG_TESTS && 'set TIDEQ_LONG_TESTS=1 (make workers-long)' }, async (t) => {
  const { kills, children } = await chaos(t, redis, { jobs: 20_000, seconds: 30 });
  t.diagnostic(`${kills} kills, ${children} children ran jobs`);
});
