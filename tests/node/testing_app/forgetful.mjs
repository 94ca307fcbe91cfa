// A test process that forgets `stop()` (tests/node/testing.test.mjs): it must still exit on its
// own, and its redis-server must die with it. Prints the server's pid, then what the inline job
// returned.
import { Queue } from 'tideq';
import { inline, startRedis } from 'tideq/testing';

const redis = await startRedis();
console.log(redis.pid);
inline({ sums: { add: async ({ a, b }) => a + b } });
const sums = new Queue('sums');
const { id } = await sums.enqueueTask('add', { a: 1, b: 2 });
console.log(`ran ${await sums.wait(id)}`);
