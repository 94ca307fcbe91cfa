// tideq quick start (Node): a capped grouped queue and a consumer. Redis: $TIDEQ_REDIS_URL.
import { createRequire } from 'node:module';
const { CappedQueue } = createRequire(import.meta.url)('../../index.js'); // in an app: require('tideq')

const events = new CappedQueue('quickstart-events', { capacity: 1000, ttlMs: 3 * 60_000 });
for (let i = 0; i < 300; i++) await events.push(`game:${i % 3}`, JSON.stringify({ player: i, event: 'joined' }));
console.log('dropped so far:', (await events.stats()).dropped);

// Batches of up to 128 items, round-robin over the games; at-most-once delivery.
const consumer = events.consume(
  async (game, items) => console.log(`${game}: ${items.length} events, first ${items[0]}`),
  { concurrency: 2, batchSize: 128, stopWhenEmpty: true },
);
const stats = await consumer.join(); // a long-running worker would use: await events.run(handler)
console.log(`handled ${stats.items} events in ${stats.batches} batches`);
