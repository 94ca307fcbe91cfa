// Makes the npm packages a release publishes, in napi-rs's layout, from built addons:
//   - `tideq`: the JavaScript, the types and the `tideq` command, with no install script and an
//     optional dependency on each platform package given here (npm installs the one that fits);
//   - `@tideq/tideq-<platform>` (e.g. `@tideq/tideq-linux-x64-gnu`): that platform's `.node` file.
//
//   node scripts/npm-packages.mjs --out DIR ADDON...
//
// Each ADDON is a file named `tideq.<platform>.node` (napi's naming, as `npm run build` and
// `napi build --platform` write it). The tarballs (`npm pack`) land in DIR; DIR/stage holds the
// package directories they were packed from. The version is package.json's, which must be the
// Cargo workspace's (scripts/set-version.py). Used by `make release` (scripts/release.sh), by
// `make test`'s install check (scripts/release-check.sh --quick) and by the release workflow.
import { execFileSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const outAt = args.indexOf('--out');
if (outAt < 0 || !args[outAt + 1]) {
  console.error('usage: node scripts/npm-packages.mjs --out DIR ADDON...');
  process.exit(2);
}
const out = resolve(args[outAt + 1]);
const addons = args.filter((_, i) => i !== outAt && i !== outAt + 1).map((a) => resolve(a));
if (addons.length === 0) {
  console.error('npm-packages: no addon given (tideq.<platform>.node)');
  process.exit(2);
}

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const cargo = readFileSync(join(root, 'Cargo.toml'), 'utf8');
const cargoVersion = cargo.split('[workspace.package]')[1].match(/^version = "([^"]+)"/m)[1];
if (cargoVersion !== pkg.version) {
  console.error(`npm-packages: package.json has ${pkg.version}, Cargo.toml ${cargoVersion} (set both with scripts/set-version.py)`);
  process.exit(1);
}
const { binaryName, packageName } = pkg.napi;
const stage = join(out, 'stage');
rmSync(stage, { recursive: true, force: true });
mkdirSync(stage, { recursive: true });

// The platform packages: napi writes each target's package.json (os, cpu, libc, main; it keeps
// the directories it manages inside the package, so they move out once made); the addons given
// are copied in, and the targets without one are left out of this release.
const main = join(stage, 'tideq');
mkdirSync(main);
writeFileSync(join(main, 'package.json'), JSON.stringify(pkg, null, 2));
execFileSync(join(root, 'node_modules', '.bin', 'napi'), ['create-npm-dirs', '--npm-dir', 'npm'], {
  cwd: main,
  stdio: ['ignore', 'ignore', 'ignore'],
});
renameSync(join(main, 'npm'), join(stage, 'npm'));
for (const addon of addons) {
  const platform = basename(addon).match(new RegExp(`^${binaryName}\\.(.+)\\.node$`))?.[1];
  if (!platform || !existsSync(join(stage, 'npm', platform))) {
    console.error(`npm-packages: ${basename(addon)} is not named ${binaryName}.<platform>.node for a platform of package.json's napi.targets`);
    process.exit(2);
  }
  copyFileSync(addon, join(stage, 'npm', platform, basename(addon)));
}
const platforms = {};
for (const dir of readdirSync(join(stage, 'npm'))) {
  const at = join(stage, 'npm', dir);
  if (!existsSync(join(at, `${binaryName}.${dir}.node`))) {
    rmSync(at, { recursive: true });
    continue;
  }
  const manifest = JSON.parse(readFileSync(join(at, 'package.json'), 'utf8'));
  manifest.description = `The ${dir} native addon of tideq (installed by \`npm install tideq\`)`;
  writeFileSync(join(at, 'package.json'), JSON.stringify(manifest, null, 2) + '\n');
  writeFileSync(
    join(at, 'README.md'),
    `# \`${manifest.name}\`\n\nThe ${dir} native addon of [tideq](https://www.npmjs.com/package/tideq). ` +
      'Install `tideq`, not this package: npm picks the addon that fits the platform.\n',
  );
  copyFileSync(join(root, 'LICENSE'), join(at, 'LICENSE'));
  platforms[manifest.name] = pkg.version;
}

// The main package: what package.json's `files` lists, no build scripts or dev tools, and an
// optional dependency on exactly the platform packages made here.
for (const file of pkg.files) cpSync(join(root, file), join(main, file), { recursive: true });
for (const file of ['README.md', 'LICENSE']) copyFileSync(join(root, file), join(main, file));
const published = { ...pkg, optionalDependencies: platforms };
for (const key of ['scripts', 'devDependencies', 'overrides', 'napi']) delete published[key];
writeFileSync(join(main, 'package.json'), JSON.stringify(published, null, 2) + '\n');

const packed = [];
for (const dir of [...Object.keys(platforms).map((n) => join(stage, 'npm', n.slice(packageName.length + 1))), main]) {
  const file = execFileSync('npm', ['pack', '--silent', '--pack-destination', out], { cwd: dir, encoding: 'utf8' }).trim();
  packed.push(file);
}
console.log(packed.join('\n'));
