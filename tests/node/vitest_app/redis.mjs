// docs/testing.md's Vitest globalSetup, as written there.
import { startRedis } from 'tideq/testing';
export default async function () {
  const redis = await startRedis();
  return () => redis.stop();
}
