// Loads the native addon through `native.js` (the loader napi generates, at the package root) and, when no addon fits
// this platform, throws an error that says which platform, which package would have it, and what
// to do, instead of the loader's list of every path it tried (kept as `cause`).
'use strict';

/** napi-rs's name for this platform, e.g. `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`. */
function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null;
    const glibc = report?.header?.glibcVersionRuntime;
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** napi's platform name for a Rust target triple: `aarch64-apple-darwin` is `darwin-arm64`. */
function napiPlatform(triple) {
  const [cpu, , os, abi] = triple.split('-');
  const arch = { x86_64: 'x64', aarch64: 'arm64', i686: 'ia32' }[cpu] ?? cpu;
  if (os === 'darwin') return `darwin-${arch}`;
  if (os === 'windows') return `win32-${arch}-${abi}`;
  return `${os}-${arch}${abi ? `-${abi}` : ''}`;
}

/** The messages of the loader's error chain (one per path it tried). */
function causes(err) {
  const out = [];
  for (let e = err?.cause; e && out.length < 20; e = e.cause) out.push(String(e.message ?? e));
  return out;
}

/** The error for a platform whose addon is missing: what is missing, why, and what to do. */
function missingAddon(cause) {
  const pkg = require('../package.json');
  const platform = platformName();
  const targets = (pkg.napi?.targets ?? []).map(napiPlatform);
  const binary = `${pkg.napi?.packageName ?? pkg.name}-${platform}`;
  // An addon that was found but would not load (a C library too old, a damaged file) says why.
  const failed = causes(cause).filter((m) => !/Cannot find module|Unsupported OS/.test(m));
  if (failed.length > 0) {
    const err = new Error(`tideq ${pkg.version}: the native addon for ${platform} was found but failed to load: ${failed[0]}`, { cause });
    err.code = 'NOT_SUPPORTED';
    return err;
  }
  const lines = [
    `tideq ${pkg.version}: no native addon for this platform (${platform}, Node ${process.version}).`,
    `It ships in the package ${binary}, an optional dependency of tideq, which is not installed.`,
    '- If that package exists for your platform, npm skipped it: a known npm bug with optional',
    '  dependencies and lockfiles made on another platform (https://github.com/npm/cli/issues/4828).',
    '  Remove node_modules and package-lock.json, then run `npm install` again.',
    `- Prebuilt platforms: ${targets.join(', ')}.`,
    '- On any other platform, build the addon from source (needs Rust, https://rustup.rs): in a',
    '  clone of the tideq repository, `npm install && npm run build`, then in your project',
    '  `npm install <path to the clone>`.',
  ];
  const err = new Error(lines.join('\n'), { cause });
  err.code = 'NOT_SUPPORTED';
  return err;
}

try {
  module.exports = require('../native.js');
} catch (err) {
  // The loader's own failure to find an addon; any other error (a broken addon, say) as it is.
  if (!/Cannot find native binding/.test(String(err?.message))) throw err;
  throw missingAddon(err);
}
