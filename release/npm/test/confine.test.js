'use strict';
// Tests of the npm packages as `npm pack` built them and `npm install` installed them
// (scripts/release-npm-test.sh sets CONFINE_NPM_APP, CONFINE_NPM_TARBALLS and CONFINE_NPM_WORK), against
// the real confine launcher on this host.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const childProcess = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const app = process.env.CONFINE_NPM_APP;
const tarballs = process.env.CONFINE_NPM_TARBALLS;
const work = process.env.CONFINE_NPM_WORK;
if (!app || !tarballs || !work) {
  throw new Error('run through scripts/release-npm-test.sh (make release-npm-test): CONFINE_NPM_APP, CONFINE_NPM_TARBALLS and CONFINE_NPM_WORK are unset');
}
const scope = path.join(app, 'node_modules', '@confine-dev');
const confine = require(path.join(scope, 'confine'));
const hostArch = process.arch;
const otherArch = hostArch === 'x64' ? 'arm64' : 'x64';

/** A fresh directory under WORK (never /tmp, which confine leaves writable). */
function dir(name) {
  return fs.mkdtempSync(path.join(work, `${name}-`));
}

/** A copy of the installed app, to break in one way. */
function copyApp(name) {
  const d = dir(name);
  fs.cpSync(app, d, { recursive: true });
  return d;
}

/** The tarball `npm pack` made whose name is prefix then the version (prefix ends with "-"). */
function tarball(prefix) {
  const f = fs.readdirSync(tarballs).find((n) => n.startsWith(prefix) && /^\d/.test(n.slice(prefix.length)));
  assert.ok(f, `no tarball ${prefix}* in ${tarballs}`);
  return path.join(tarballs, f);
}

test('npm installed this host\'s platform package only, and refuses the other architecture\'s', () => {
  assert.ok(fs.existsSync(path.join(scope, `confine-linux-${hostArch}`, 'bin', 'confine')));
  assert.ok(!fs.existsSync(path.join(scope, `confine-linux-${otherArch}`)), 'the other architecture was installed');
  const d = dir('badplatform');
  fs.writeFileSync(path.join(d, 'package.json'), '{"name":"x","version":"1.0.0","private":true}');
  const r = childProcess.spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts',
    tarball(`confine-dev-confine-linux-${otherArch}-`)], { cwd: d, encoding: 'utf8' });
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /EBADPLATFORM/);
});

test('the root package ships its TypeScript types', () => {
  const list = childProcess.execFileSync('tar', ['-tzf', tarball('confine-dev-confine-')], { encoding: 'utf8' });
  assert.match(list, /^package\/index\.d\.ts$/m);
  assert.ok(fs.existsSync(path.join(scope, 'confine', 'index.d.ts')));
});

test('resolve returns this host\'s launcher, executable, with its exec bit', () => {
  const r = confine.resolve();
  assert.equal(r.package, `@confine-dev/confine-linux-${hostArch}`);
  assert.equal(r.arch, hostArch);
  assert.equal(path.basename(r.path), r.wsl ? 'confine-wsl2' : 'confine');
  assert.equal(fs.statSync(r.path).mode & 0o777, 0o755);
  const out = childProcess.execFileSync(r.path, ['version'], { encoding: 'utf8' });
  assert.match(out, /^confine \S+\n$/);
});

test('on WSL the guest architecture picks the WSL2 launcher', () => {
  // Not a real WSL guest: the host is given, as host() would detect it from the kernel release.
  const r = confine.resolve({ host: { arch: hostArch, wsl: true } });
  assert.equal(path.basename(r.path), 'confine-wsl2');
  const manifest = JSON.parse(fs.readFileSync(path.join(path.dirname(r.path), '..', 'manifest.json'), 'utf8'));
  assert.ok(manifest.binaries.some((b) => b.path === 'bin/confine-wsl2' && b.wsl2));
});

test('a missing platform package is an error naming it', () => {
  const broken = copyApp('nopkg');
  fs.rmSync(path.join(broken, 'node_modules', '@confine-dev', `confine-linux-${hostArch}`), { recursive: true });
  const c = require(path.join(broken, 'node_modules', '@confine-dev', 'confine'));
  assert.throws(() => c.resolve(), (e) => e.code === 'ENOPKG' &&
    e.message.includes(`@confine-dev/confine-linux-${hostArch} is not installed`) &&
    // It says how to get the package from a clone, never to npm-install a name no registry may have yet.
    e.message.includes(`npm pack out/release/npm/confine-linux-${hostArch}`) &&
    e.message.includes('confinePath') && !/npm install @confine-dev\//.test(e.message));
  // The other architecture's package was never installed here either.
  assert.throws(() => confine.resolve({ host: { arch: otherArch, wsl: false } }),
    (e) => e.code === 'ENOPKG' && e.message.includes(`@confine-dev/confine-linux-${otherArch}`));
});

test('a launcher for the wrong machine is refused with a clear message, not ENOEXEC', () => {
  const broken = copyApp('wrongarch');
  const bin = path.join(broken, 'node_modules', '@confine-dev', `confine-linux-${hostArch}`, 'bin', 'confine');
  // The other architecture's real launcher, from its npm tarball.
  const x = dir('extract');
  childProcess.execFileSync('tar', ['-xzf', tarball(`confine-dev-confine-linux-${otherArch}-`), '-C', x]);
  fs.copyFileSync(path.join(x, 'package', 'bin', 'confine'), bin);
  const c = require(path.join(broken, 'node_modules', '@confine-dev', 'confine'));
  const want = hostArch === 'x64' ? /is built for aarch64, but this host is x86-64/ : /is built for x86-64, but this host is aarch64/;
  assert.throws(() => c.resolve(), (e) => e.code === 'EARCH' && want.test(e.message));
});

test('a launcher a confined command could have replaced is refused, and nothing runs (issue 25)', async () => {
  // The extension lives in the repository it works on: its node_modules is inside the worktree, where one
  // confined `npm ci` could put a launcher that runs commands unconfined and forges an "ok" report.
  const wt = dir('selfedit');
  const inApp = path.join(wt, 'app');
  fs.cpSync(app, inApp, { recursive: true });
  const bin = path.join(inApp, 'node_modules', '@confine-dev', `confine-linux-${hostArch}`, 'bin', 'confine');
  fs.copyFileSync('/usr/bin/env', bin); // an ELF for this host: resolve() takes it, only where it lies is wrong
  const c = require(path.join(inApp, 'node_modules', '@confine-dev', 'confine'));
  const ran = path.join(dir('forged'), 'ran');
  for (const opts of [{ worktree: wt }, { worktree: dir('other'), allow: [inApp] }]) {
    await assert.rejects(c.run(['/bin/sh', '-c', 'touch "$1"', 'sh', ran], opts),
      (e) => e.code === 'EUNTRUSTED' && e.message.includes(`lies beneath ${opts.allow ? inApp : wt}`));
  }
  // The same through confinePath, and a real launcher that others may write.
  await assert.rejects(confine.run(['/bin/true'], { worktree: wt, confinePath: bin }), (e) => e.code === 'EUNTRUSTED');
  const loose = copyApp('loose');
  const looseBin = path.join(loose, 'node_modules', '@confine-dev', `confine-linux-${hostArch}`, 'bin', 'confine');
  fs.chmodSync(looseBin, 0o775);
  const l = require(path.join(loose, 'node_modules', '@confine-dev', 'confine'));
  await assert.rejects(l.run(['/bin/true'], { worktree: dir('loosewt') }),
    (e) => e.code === 'EUNTRUSTED' && /writable by group or others \(mode 775\)/.test(e.message));
  // A launcher npx fetched into npm's cache, which --profile npm grants, or one hard-linked from a store.
  const cache = dir('npmcache');
  const npx = path.join(cache, '_npx', 'x');
  fs.mkdirSync(npx, { recursive: true });
  fs.copyFileSync(confine.resolve().path, path.join(npx, 'confine'));
  const saved = process.env.npm_config_cache;
  process.env.npm_config_cache = cache;
  try {
    await assert.rejects(confine.run(['/bin/true'], { worktree: dir('npxwt'), confinePath: path.join(npx, 'confine') }),
      (e) => e.code === 'EUNTRUSTED' && e.message.includes(`lies beneath ${cache}, which a confine profile grants`));
  } finally {
    if (saved === undefined) delete process.env.npm_config_cache; else process.env.npm_config_cache = saved;
  }
  const linked = path.join(dir('linked'), 'confine');
  fs.linkSync(path.join(npx, 'confine'), linked);
  await assert.rejects(confine.run(['/bin/true'], { worktree: dir('linkwt'), confinePath: linked }),
    (e) => e.code === 'EUNTRUSTED' && e.message.includes('other hard links'));
  assert.ok(!fs.existsSync(ran), 'the planted launcher ran');
});

test('a launcher shown under another name by a bind mount or an overlay is refused as beneath its root (issue 43, finding 3)', (t) => {
  // The worktree at a second path, a directory of it at another, and the launcher's own directory bound into
  // it: the path is outside every root each time, yet one confined run could replace the launcher. Checked
  // in a mount namespace of its own (unshare -m as root, -Urm otherwise), with a control that must pass.
  const root = process.getuid() === 0;
  if (childProcess.spawnSync('unshare', [root ? '-m' : '-Urm', 'true']).status !== 0) {
    t.skip(`unshare ${root ? '-m' : '-Urm'} is not allowed here: no mount namespace to make the bind mounts in`);
    return;
  }
  const d = dir('bindalias');
  const wt = path.join(d, 'wt');
  fs.cpSync(app, path.join(wt, 'app'), { recursive: true });
  const outside = path.join(d, 'outside');
  fs.mkdirSync(outside);
  fs.copyFileSync(confine.resolve().path, path.join(outside, 'confine'));
  for (const m of ['alias', 'sub', path.join('wt', 'mnt')]) fs.mkdirSync(path.join(d, m));
  const launcher = path.join('node_modules', '@confine-dev', `confine-linux-${hostArch}`, 'bin', 'confine');
  const cases = [
    ['the worktree at a second path', path.join(d, 'alias', 'app', launcher)],
    ['a directory of the worktree at a second path', path.join(d, 'sub', launcher)],
    ['the launcher\'s directory bound into the worktree', path.join(outside, 'confine')],
  ];
  const probe = `const c = require(${JSON.stringify(path.join(scope, 'confine'))});
    for (const f of JSON.parse(process.argv[1])) {
      try { console.log('ok ' + c.trustedLauncher(f, [${JSON.stringify(wt)}])); }
      catch (e) { console.log(e.code + ' ' + e.message); }
    }
    const control = [${JSON.stringify(path.join(outside, 'confine'))}, [${JSON.stringify(path.join(d, 'alias'))}]];
    try { console.log('ok ' + c.trustedLauncher(...control)); }
    catch (e) { console.log(e.code + ' ' + e.message); }`;
  // An overlay whose upper layer is inside the worktree (attack review): its files show at a device of their own.
  fs.mkdirSync(path.join(wt, 'up'));
  fs.copyFileSync(confine.resolve().path, path.join(wt, 'up', 'confine'));
  for (const m of ['low', 'work', 'ov']) fs.mkdirSync(path.join(d, m));
  cases.push(['an overlay whose upper layer is in the worktree', path.join(d, 'ov', 'confine')]);
  const script = 'mount --bind "$1/wt" "$1/alias" && mount --bind "$1/wt/app" "$1/sub" && ' +
    'mount --bind "$1/outside" "$1/wt/mnt" && ' +
    'mount -t overlay overlay -o "lowerdir=$1/low,upperdir=$1/wt/up,workdir=$1/work" "$1/ov" && exec node -e "$2" "$3"';
  const r = childProcess.spawnSync('unshare', [root ? '-m' : '-Urm', '--propagation', 'private', 'sh', '-c', script,
    'sh', d, probe, JSON.stringify(cases.map(([, f]) => f))], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, cases.length + 1, r.stdout);
  cases.forEach(([what], i) =>
    assert.match(lines[i], /^EUNTRUSTED .*lies beneath .*\/wt under another name \(a bind mount, an overlay or a loop device\)/, what));
  // The control: the same launcher, with the worktree's earlier alias (which does not show the later bind) as the
  // root. In a user namespace root's directories on the way show as the overflow uid, which the owner check
  // refuses on its own: there the control asks only that the bind-mount check does not refuse it.
  if (root) assert.equal(lines[cases.length], `ok ${path.join(outside, 'confine')}`);
  else assert.doesNotMatch(lines[cases.length], /under another name/);
});

test('a launcher on a loop device whose backing file is in the worktree is refused as beneath its root', (t) => {
  // The file system mounted from a backing file is that file's content: one confined write to the image in the
  // worktree replaces the launcher it holds. Root only (losetup and mount need it; a user namespace may not
  // mount an ext2 image), in a mount namespace of its own, with a control root that must pass.
  if (process.getuid() !== 0) {
    t.skip('needs root: a loop device and an ext2 mount');
    return;
  }
  const tools = ['unshare', 'losetup', 'mkfs.ext2'].filter((c) => childProcess.spawnSync('sh', ['-c', `command -v ${c}`]).status !== 0);
  if (tools.length > 0 || childProcess.spawnSync('unshare', ['-m', 'true']).status !== 0) {
    t.skip(`no ${tools.join(', ') || 'mount namespace'} here: the loop device cannot be made`);
    return;
  }
  const d = dir('loopalias');
  const wt = path.join(d, 'wt');
  const mnt = path.join(d, 'mnt');
  fs.mkdirSync(wt);
  fs.mkdirSync(mnt);
  const img = path.join(wt, 'disk.img');
  fs.writeFileSync(img, Buffer.alloc(0));
  fs.truncateSync(img, 4 << 20);
  assert.equal(childProcess.spawnSync('mkfs.ext2', ['-q', '-F', img]).status, 0);
  const probe = `const c = require(${JSON.stringify(path.join(scope, 'confine'))});
    for (const roots of [[${JSON.stringify(wt)}], [${JSON.stringify(path.join(d, 'elsewhere'))}]]) {
      try { console.log('ok ' + c.trustedLauncher(process.argv[1], roots)); }
      catch (e) { console.log(e.code + ' ' + e.message); }
    }`;
  const script = 'mount -o loop "$1/wt/disk.img" "$1/mnt" && cp "$2" "$1/mnt/confine" && chmod 755 "$1/mnt" && ' +
    'exec node -e "$3" "$1/mnt/confine"';
  const r = childProcess.spawnSync('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script, 'sh', d,
    confine.resolve().path, probe], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.match(lines[0], /^EUNTRUSTED .*lies beneath .*\/wt under another name \(a bind mount, an overlay or a loop device\)/);
  assert.equal(lines[1], `ok ${path.join(mnt, 'confine')}`);
});

test('a write inside the worktree succeeds', async () => {
  const wt = dir('inside');
  const r = await confine.run(['/bin/sh', '-c', 'echo hi > "$1"', 'sh', path.join(wt, 'f')], { worktree: wt });
  assert.equal(r.kind, 'ok', r.stderr);
  assert.equal(r.exitCode, 0);
  assert.equal(r.report.schema, 'confine.report/v1');
  assert.equal(r.report.outcome, 'exec');
  assert.equal(fs.readFileSync(path.join(wt, 'f'), 'utf8'), 'hi\n');
});

test('the command runs in the worktree unless told otherwise', async () => {
  const wt = dir('cwd');
  const r = await confine.run(['/bin/sh', '-c', 'echo hi > relative'], { worktree: wt });
  assert.equal(r.kind, 'ok', r.stderr);
  assert.equal(fs.readFileSync(path.join(wt, 'relative'), 'utf8'), 'hi\n');
});

test('a write outside the worktree fails, and the command\'s own status is reported', async () => {
  const wt = dir('wt');
  const outside = dir('outside');
  const target = path.join(outside, 'f');
  const r = await confine.run(['/bin/sh', '-c', 'echo hi > "$1"', 'sh', target], { worktree: wt });
  assert.equal(r.kind, 'failed');
  assert.notEqual(r.exitCode, 0);
  assert.equal(r.signal, null);
  assert.equal(r.report.outcome, 'exec');
  assert.ok(!fs.existsSync(target), 'the write outside the worktree happened');
});

test('a refusal is told apart: 125 and the report\'s reason, nothing ran', async () => {
  const wt = dir('refused');
  const r = await confine.run(['/bin/sh', '-c', 'touch "$1"', 'sh', path.join(wt, 'ran')], { worktree: 'relative/path' });
  assert.equal(r.kind, 'refused');
  assert.equal(r.exitCode, 125);
  assert.equal(r.reason, 'bad-root');
  assert.ok(!fs.existsSync(path.join(wt, 'ran')));
});

test('exec failure is told apart from the command failing', async () => {
  const wt = dir('execfail');
  const r = await confine.run([path.join(wt, 'no-such-command')], { worktree: wt });
  assert.equal(r.kind, 'exec-failed');
  assert.equal(r.exitCode, 127);
  assert.equal(r.reason, 'command-not-found');
  // The command itself exiting 127 is the command failing.
  const own = await confine.run(['/bin/sh', '-c', 'exit 127'], { worktree: wt });
  assert.equal(own.kind, 'failed');
  assert.equal(own.exitCode, 127);
});

test('an execve that fails after the report is told apart by its second record', async () => {
  const wt = dir('interp');
  const script = path.join(wt, 'script');
  fs.writeFileSync(script, '#!/nonexistent/sh\necho hi\n', { mode: 0o755 });
  const r = await confine.run([script], { worktree: wt });
  assert.equal(r.kind, 'exec-failed');
  assert.equal(r.exitCode, 127);
  assert.equal(r.reason, 'interpreter-missing');
  assert.equal(r.report.outcome, 'exec');
  assert.equal(r.execFailed.schema, 'confine.exec-failed/v1');
  assert.match(r.execFailed.error, /\/nonexistent\/sh/);
});

test('a command killed by a signal is reported with that signal', async () => {
  const wt = dir('signal');
  const r = await confine.run(['/bin/sh', '-c', 'kill -KILL $$'], { worktree: wt });
  assert.equal(r.kind, 'failed');
  assert.equal(r.signal, 'SIGKILL');
  assert.equal(r.exitCode, null);
});

test('argv is never joined into a shell string', async () => {
  const wt = dir('argv');
  const arg = `$(touch ${path.join(wt, 'pwned')}); \`touch ${path.join(wt, 'pwned2')}\``;
  const r = await confine.run(['/bin/echo', arg], { worktree: wt, cwd: wt });
  assert.equal(r.kind, 'ok');
  assert.equal(r.stdout, `${arg}\n`);
  assert.deepEqual(fs.readdirSync(wt), []);
  await assert.rejects(confine.run('echo hi', { worktree: wt }), TypeError);
});
