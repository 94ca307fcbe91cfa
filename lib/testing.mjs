// `import { fake, inline, startRedis } from 'tideq/testing'`: the CommonJS module's exports, so
// `import` and `require` share one set of functions (and the one test mode of the process).
import testing from './testing.js';

export const { fake, inline, startRedis } = testing;
export default testing;
