// The TypeScript definitions against the core: the `ErrorCode` union in index.d.ts is exactly the
// core's list of error codes (`ErrorKind::ALL` and `ErrorKind::code` in core/src/error.rs), and
// every code an error carries at run time is one of them (harness.mjs's rejectsWith checks each
// error the suite provokes). `tsc --strict` over tests/node/types/api.ts (scripts/test-node.sh)
// checks the rest of the definitions.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { errorCodes } from './harness.mjs';

const root = new URL('../../', import.meta.url);

/** The core's codes, in `ErrorKind::ALL`'s order, each through `ErrorKind::code`'s arms. */
function coreCodes() {
  const src = readFileSync(new URL('core/src/error.rs', root), 'utf8');
  const body = (start) => {
    const at = src.indexOf(start);
    assert.ok(at >= 0, `core/src/error.rs has no ${start}`);
    return src.slice(at, src.indexOf('}', src.indexOf('{', at) + 1) + 1);
  };
  const codeOf = new Map(
    [...body('pub fn code(self)').matchAll(/ErrorKind::(\w+) => "([A-Z_]+)"/g)].map((m) => [m[1], m[2]]),
  );
  const all = [...body('pub const ALL').matchAll(/ErrorKind::(\w+)/g)].map((m) => m[1]);
  assert.ok(all.length >= 18, `read ${all.length} kinds from ErrorKind::ALL`);
  return all.map((kind) => {
    assert.ok(codeOf.has(kind), `ErrorKind::${kind} has no code arm`);
    return codeOf.get(kind);
  });
}

test('the ErrorCode union of index.d.ts is exactly the core error codes, in their order', () => {
  const core = coreCodes();
  assert.equal(new Set(core).size, core.length, 'the core codes are distinct');
  assert.deepEqual(errorCodes, core);
});

test('index.d.ts has no any and resolves Buffer without a types setting', () => {
  const dts = readFileSync(new URL('index.d.ts', root), 'utf8');
  // Code only: doc comments say "any" in prose.
  const code = dts.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  assert.doesNotMatch(code, /\bany\b/);
  assert.match(dts, /^\/\/\/ <reference types="node" \/>$/m);
});
