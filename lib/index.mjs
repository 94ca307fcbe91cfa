// The package's ES module entry (`import { Queue } from 'tideq'`): the CommonJS entry's exports,
// re-exported, so `import` and `require` share one addon and one set of classes.
export * from './index.js';
export { default } from './index.js';
