// The Vitest setup of docs/testing.md (real mode), run by tests/node/vitest.test.mjs: a
// globalSetup file starts the private redis-server, the test files inherit TIDEQ_REDIS_URL.
import { fileURLToPath } from 'node:url';

export default {
  test: {
    root: fileURLToPath(new URL('.', import.meta.url)),
    include: ['*.vitest.mjs'],
    globalSetup: ['./redis.mjs'],
  },
};
