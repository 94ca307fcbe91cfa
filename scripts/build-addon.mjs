// The npm `install` script: makes sure the native addon native.js loads exists. A package built by
// `make dist` ships it prebuilt (nothing to do); an install from this source tree, a path or a git
// URL builds it with cargo (Rust's build tool, https://rustup.rs), which takes a few minutes.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, openSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/** The file name native.js loads on this platform (napi-rs naming). */
function addonName() {
  const arch = { x64: 'x64', arm64: 'arm64' }[process.arch] ?? process.arch;
  if (process.platform === 'linux') {
    const report = process.report?.getReport?.();
    const musl = report && !report.header?.glibcVersionRuntime;
    return `tideq.linux-${arch}-${musl ? 'musl' : 'gnu'}.node`;
  }
  if (process.platform === 'darwin') return `tideq.darwin-${arch}.node`;
  if (process.platform === 'win32') return `tideq.win32-${arch}-msvc.node`;
  return `tideq.${process.platform}-${arch}.node`;
}

/** Progress the user can see: npm hides install-script output, so also to the terminal. */
function say(line) {
  process.stderr.write(`${line}\n`);
  try {
    const tty = openSync('/dev/tty', 'w');
    writeSync(tty, `${line}\n`);
  } catch {
    // No terminal (CI): stderr only.
  }
}

const target = join(root, addonName());
// The repository's own test scripts build it with the napi CLI instead (it regenerates index.d.ts).
if (process.env.TIDEQ_SKIP_ADDON_BUILD || (existsSync(target) && !process.env.TIDEQ_BUILD_ADDON)) {
  process.exit(0);
}
if (!existsSync(join(root, 'bindings-node', 'Cargo.toml'))) {
  say(`tideq: no prebuilt native addon for ${process.platform}-${process.arch} (${addonName()}), and no sources to build one`);
  process.exit(1);
}
const cargo = spawnSync('cargo', ['--version'], { encoding: 'utf8' });
if (cargo.status !== 0) {
  say('tideq: building the native addon needs cargo (the Rust toolchain: https://rustup.rs), which was not found on PATH.');
  say('tideq: install Rust, or install a package built by `make dist`, which includes the addon prebuilt.');
  process.exit(1);
}
say('tideq: building the native addon with cargo (release build: a few minutes the first time)...');
const t0 = Date.now();
execFileSync('cargo', ['build', '--release', '-p', 'tideq-node', '--manifest-path', join(root, 'Cargo.toml')], {
  cwd: root,
  stdio: ['ignore', 'inherit', 'inherit'],
});
const targetDir = process.env.CARGO_TARGET_DIR ?? join(root, 'target');
const lib = { darwin: 'libtideq_node.dylib', win32: 'tideq_node.dll' }[process.platform] ?? 'libtideq_node.so';
copyFileSync(join(targetDir, 'release', lib), target);
say(`tideq: built ${addonName()} in ${Math.round((Date.now() - t0) / 1000)} s`);
