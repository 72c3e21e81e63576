'use strict';
// @confine-dev/confine: find the confine launcher that npm installed for this host (one optional
// platform package per architecture, chosen by npm from its "os" and "cpu" fields), and run a command
// under it. Types and documentation: index.d.ts.

const childProcess = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** npm package of the launchers for each Node architecture. */
const PACKAGES = Object.freeze({
  x64: '@confine-dev/confine-linux-x64',
  arm64: '@confine-dev/confine-linux-arm64',
});

/** ELF e_machine of each Node architecture (elf.h: EM_X86_64 = 62, EM_AARCH64 = 183). */
const MACHINES = Object.freeze({ x64: 62, arm64: 183 });
const MACHINE_NAMES = Object.freeze({ 62: 'x86-64', 183: 'aarch64', 3: 'i386', 40: 'arm', 243: 'riscv' });

/** uname -m of the Linux kernel to Node's architecture names. */
const UNAME = Object.freeze({ x86_64: 'x64', aarch64: 'arm64', arm64: 'arm64' });

class ConfineError extends Error {
  /** @param {string} code @param {string} message */
  constructor(code, message) {
    super(message);
    this.name = 'ConfineError';
    this.code = code;
  }
}

/** Whether this Linux is WSL (1 or 2): the kernel release names Microsoft, or WSL's interop entry exists. */
function isWSL() {
  if (/microsoft/i.test(os.release())) return true;
  try {
    fs.accessSync('/proc/sys/fs/binfmt_misc/WSLInterop');
    return true;
  } catch {
    return false;
  }
}

/**
 * The host confine must be built for. On WSL the Linux guest's architecture (uname -m) decides, not
 * the Node binary's: an x64 Node emulated on an arm64 guest still needs the arm64 launcher's kernel ABI.
 */
function host() {
  if (process.platform !== 'linux') {
    throw new ConfineError('EPLATFORM', `confine: runs on Linux only, not ${process.platform}`);
  }
  const wsl = isWSL();
  const arch = wsl ? UNAME[os.machine()] : process.arch;
  if (!arch || !PACKAGES[arch]) {
    throw new ConfineError('EPLATFORM',
      `confine: no launcher for architecture ${wsl ? os.machine() : process.arch} (have ${Object.keys(PACKAGES).join(', ')})`);
  }
  return { arch, wsl };
}

/** The ELF e_machine of the file at file, or a ConfineError when it is not a 64-bit little-endian ELF. */
function elfMachine(file) {
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(20);
  let n;
  try {
    n = fs.readSync(fd, head, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  if (n < 20 || head.readUInt32BE(0) !== 0x7f454c46 || head[4] !== 2 || head[5] !== 1) {
    throw new ConfineError('ENOTELF', `confine: ${file} is not a 64-bit little-endian ELF executable`);
  }
  return head.readUInt16LE(18);
}

/**
 * Resolve the launcher for this host. Throws ConfineError: EPLATFORM (not Linux, or an architecture
 * confine does not ship), ENOPKG (the platform package is not installed; the message names it),
 * ENOTELF or EARCH (the installed binary is not an ELF for this host's machine).
 */
function resolve(options = {}) {
  const h = options.host || host();
  const pkg = PACKAGES[h.arch];
  let manifest;
  try {
    manifest = require.resolve(`${pkg}/manifest.json`, options.paths ? { paths: options.paths } : undefined);
  } catch {
    // Not "npm install <pkg>": until a release is published there is nothing by that name to install.
    throw new ConfineError('ENOPKG',
      `confine: the platform package ${pkg} is not installed, so there is no launcher for linux/${h.arch}; ` +
      `install it at the version of @confine-dev/confine (from a clone of confine: \`make release\`, then ` +
      `\`npm pack out/release/npm/confine-linux-${h.arch}\` and npm install the .tgz it writes), or pass ` +
      `options.confinePath (a launcher built by \`make confine\`), rather than running commands unconfined`);
  }
  const dir = path.dirname(manifest);
  const file = path.join(dir, 'bin', h.wsl ? 'confine-wsl2' : 'confine');
  const got = elfMachine(file);
  if (got !== MACHINES[h.arch]) {
    throw new ConfineError('EARCH',
      `confine: ${file} is built for ${MACHINE_NAMES[got] || `ELF machine ${got}`}, but this host is ` +
      `${MACHINE_NAMES[MACHINES[h.arch]]} (${h.arch}${h.wsl ? ', WSL guest' : ''}); reinstall ${pkg}`);
  }
  return { path: file, package: pkg, arch: h.arch, wsl: h.wsl };
}

/** Directories every confined command may write, whatever its roots (sandbox/README.md). */
const ALWAYS_WRITABLE = Object.freeze(['/tmp', '/dev/shm']);

/**
 * Every directory a confine profile (--profile npm, pnpm, …) may grant, as candidates "VARIABLE[/SUB]" (the
 * variable's value plus SUB; XDG_* only when absolute): the candidates of sandbox/profile's table, all of them,
 * not only the one a launch would pick, since other callers' runs may have other variables. A launcher beneath
 * one (npx's ~/.npm/_npx, pnpm's store) could have been rewritten by any run that named the profile.
 */
const PROFILE_DIRS = Object.freeze([
  'npm_config_cache', 'NPM_CONFIG_CACHE', 'HOME/.npm',
  'PIP_CACHE_DIR', 'XDG_CACHE_HOME/pip', 'HOME/.cache/pip',
  'CARGO_HOME', 'HOME/.cargo',
  'GOCACHE', 'XDG_CACHE_HOME/go-build', 'HOME/.cache/go-build', 'GOMODCACHE', 'GOPATH/pkg', 'HOME/go/pkg',
  'GRADLE_USER_HOME', 'HOME/.gradle', 'HOME/.m2', 'MAVEN_USER_HOME',
  'YARN_CACHE_FOLDER', 'XDG_CACHE_HOME/yarn', 'HOME/.cache/yarn', 'YARN_GLOBAL_FOLDER', 'HOME/.yarn/berry',
  'npm_config_store_dir', 'PNPM_HOME/store', 'XDG_DATA_HOME/pnpm/store', 'HOME/.local/share/pnpm/store',
  'npm_config_cache_dir', 'XDG_CACHE_HOME/pnpm', 'HOME/.cache/pnpm', 'npm_config_state_dir', 'XDG_STATE_HOME/pnpm',
  'HOME/.local/state/pnpm',
  'GIT_CONFIG_GLOBAL/..', 'XDG_CONFIG_HOME/git', 'HOME/.config/git',
]);

/** The profile directories of env (PROFILE_DIRS), absolute, each once. */
function profileDirs(env) {
  const out = new Set();
  for (const c of PROFILE_DIRS) {
    const [name, ...rest] = c.split('/');
    let v = env[name];
    if (!v || (name.startsWith('XDG_') && !path.isAbsolute(v))) continue;
    if (name === 'GOPATH') v = v.split(':')[0];
    if (!path.isAbsolute(v)) continue;
    out.add(path.resolve(v, ...rest));
  }
  return [...out];
}

/** Whether path is dir or lies beneath it (both absolute and without symlinks). */
function within(p, dir) {
  return p === dir || dir === '/' || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/** dir's real path where it exists, else dir itself (a root that does not exist makes confine refuse). */
function realOr(dir) {
  try {
    return fs.realpathSync(path.resolve(dir));
  } catch {
    return path.resolve(dir);
  }
}

/**
 * The mounts of /proc/self/mountinfo as { dev: "major:minor", root: the directory of its file system it shows,
 * point: where, layers: an overlay's layer directories (else []) }, octal escapes undone; [] where it cannot be read (the identities are still compared).
 */
function readMounts() {
  let text;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const unescape = (s) => s.replace(/\\([0-7]{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8)));
  return text.split('\n').filter((l) => l !== '').map((l) => {
    const f = l.split(' ');
    const sep = f.indexOf('-');
    const layers = sep > 0 && f[sep + 1] === 'overlay' ? overlayLayers(f[sep + 3] || '').map(unescape) : [];
    return { dev: f[2], root: unescape(f[3]), point: unescape(f[4]), layers };
  });
}

/**
 * The layer directories an overlay's super options name (lowerdir=A:B, lowerdir+=A, upperdir=U, datadir+=D;
 * Documentation/filesystems/overlayfs.rst), still escaped.
 */
function overlayLayers(opts) {
  const out = [];
  for (const o of opts.split(',')) {
    const i = o.indexOf('=');
    const key = o.slice(0, i), val = o.slice(i + 1);
    if (key === 'lowerdir') out.push(...val.split(':'));
    else if (['upperdir', 'lowerdir+', 'datadir+'].includes(key)) out.push(val);
  }
  return out;
}

/**
 * Where in its file system the real path p may be: { dev, path } through every mount on p's way (a mount
 * stacked over another on the way counts too: this errs toward refusing).
 */
function placesOf(p, mounts) {
  return mounts.filter((m) => within(p, m.point))
    .map((m) => ({ dev: m.dev, path: path.join(m.root, path.relative(m.point, p)) }));
}

/**
 * Whether the launcher at real, whose ancestors (real's directory up to /) have the identities ids
 * ("dev:ino"), is the directory dir's, or beneath it, under another name: a bind mount shows dir, or a
 * directory beneath it, at a second path, or shows the launcher's directory beneath dir, or an overlay or a loop
 * device shows a layer or a backing file inside dir where the launcher is. The command can write
 * the launcher through dir then, whatever the path says (issue 43, finding 3). dir is real and absolute; one
 * that does not exist shows nothing.
 */
function aliased(real, ids, dir, mounts) {
  let st;
  try {
    st = fs.statSync(dir, { bigint: true });
  } catch {
    return false;
  }
  if (ids.has(`${st.dev}:${st.ino}`)) return true;
  const beneath = mounts.filter((m) => within(m.point, dir)).map((m) => ({ dev: m.dev, path: m.root }));
  const regions = [...placesOf(dir, mounts), ...beneath];
  if (placesOf(real, mounts).some((p) => regions.some((r) => r.dev === p.dev && within(p.path, r.path)))) return true;
  // An overlay has a device of its own: what shows through it is its layers' files (attack review), so a layer
  // inside dir, or the launcher's place in a layer that dir holds, is dir's too.
  if (mounts.some((m) => within(real, m.point) && m.layers.some((l) => path.isAbsolute(l) &&
    (within(l, dir) || within(path.join(l, path.relative(m.point, real)), dir))))) return true;
  // A loop device's file system is its backing file's content: a backing file inside dir is dir's too (the
  // launcher's own check of --config files, sandbox/launch/aliases.go, found it).
  return mounts.some((m) => {
    if (!within(real, m.point) || !m.dev.startsWith(LOOP_MAJOR)) return false;
    const backing = loopBacking(m.dev);
    return backing !== '' && within(backing, dir);
  });
}

/** The loop devices' major number as mountinfo's major:minor starts (Documentation/admin-guide/devices.txt). */
const LOOP_MAJOR = '7:';

/**
 * The backing file of the loop device dev ("major:minor"), as the kernel reports it
 * (/sys/dev/block/DEV/loop/backing_file, drivers/block/loop.c), or '' where it cannot be read.
 */
function loopBacking(dev) {
  try {
    return fs.readFileSync(`/sys/dev/block/${dev}/loop/backing_file`, 'utf8').replace(/\n$/, '');
  } catch {
    return '';
  }
}

/**
 * The launcher's real path, once checked that no confined command could have written it (issue 25): a launcher
 * in a node_modules inside the worktree could be replaced by one confined `npm ci`, and the next run() would
 * then be unconfined, with a forged report. The rule is the one confine applies to bwrap: the file's real
 * path, and every directory on the way to it, lie beneath none of writable (the run's worktree and allow
 * roots), /tmp, /dev/shm and the directories a confine profile may grant (PROFILE_DIRS), by path or under
 * another name (a bind mount: the identities of the directories on the way and the mounts' roots are compared,
 * issue 43), are owned by root or by this user, and are writable by no one else (a directory may be sticky and
 * writable by all, as /tmp is, only above the file); and the file has no other hard link. Throws ConfineError
 * EUNTRUSTED naming what is wrong, or ENOENT. run() spawns the path returned, never the name it was given.
 */
function trustedLauncher(file, writable = []) {
  let real;
  try {
    real = fs.realpathSync(file);
  } catch (e) {
    throw new ConfineError('ENOENT', `confine: the launcher ${file} cannot be found (${e.code || e.message})`);
  }
  const untrusted = (why) => new ConfineError('EUNTRUSTED', `confine: refusing the launcher ${real}` +
    (real === file ? '' : ` (from ${file})`) + `: ${why}; install it outside every directory a confined ` +
    'command can write (see the README: an extension that edits its own repository)');
  const grants = [
    ...[...ALWAYS_WRITABLE, ...writable.map(realOr)].map((dir) => [dir, 'which a confined command can write']),
    ...profileDirs(process.env).map(realOr)
      .map((dir) => [dir, 'which a confine profile grants (a run with --profile can write it)']),
  ];
  for (const [dir, why] of grants) {
    if (within(real, dir)) throw untrusted(`it lies beneath ${dir}, ${why}`);
  }
  const ids = new Set();
  for (let p = path.dirname(real); ; p = path.dirname(p)) {
    const st = fs.statSync(p, { bigint: true });
    ids.add(`${st.dev}:${st.ino}`);
    if (p === '/') break;
  }
  const mounts = readMounts();
  for (const [dir, why] of grants) {
    if (aliased(real, ids, dir, mounts)) {
      throw untrusted(`it lies beneath ${dir} under another name (a bind mount, an overlay or a loop device), ${why}`);
    }
  }
  if (fs.statSync(real).nlink > 1) {
    throw untrusted('it has other hard links, and another name could lie beneath a writable root (pnpm and bun ' +
      'link package files from a store that --profile pnpm grants: install with npm, or with pnpm\'s ' +
      'package-import-method=copy)');
  }
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  for (let p = real; ; p = path.dirname(p)) {
    const st = fs.lstatSync(p);
    const what = p === real ? 'it' : `its directory ${p}`;
    if (st.uid !== 0 && st.uid !== uid) throw untrusted(`${what} is owned by uid ${st.uid}, neither root nor this user`);
    const sticky = st.isDirectory() && (st.mode & 0o1000) !== 0;
    if ((st.mode & 0o022) !== 0 && !(sticky && p !== real)) {
      throw untrusted(`${what} is writable by group or others (mode ${(st.mode & 0o7777).toString(8)})`);
    }
    if (p === real && !st.isFile()) throw untrusted('it is not a regular file');
    if (p === '/') return real;
  }
}

/**
 * The command's default working directory: the worktree, when it is a directory; otherwise the caller's, so
 * that confine itself refuses the worktree (bad-root) instead of the spawn failing before it.
 */
function defaultCwd(worktree) {
  try {
    return fs.statSync(worktree).isDirectory() ? worktree : undefined;
  } catch {
    return undefined;
  }
}

/** confine's exit statuses (sandbox/README.md). */
const REFUSED = 125;
const EXEC_REASONS = new Set(['command-not-found', 'command-not-executable', 'wrong-arch', 'interpreter-missing']);

/**
 * Run argv under confine with worktree writable. argv is an array and is never joined into a shell
 * string; pass ['/bin/sh', '-c', script] to use a shell. The command runs in options.cwd, by default the
 * worktree. Resolves to a RunResult (see index.d.ts); rejects (never throws) when the launcher cannot be
 * found or started (ConfineError ENOPKG, EARCH, EPLATFORM, ...) or its report is not JSON. fd 3 carries one
 * JSON line, the report, and a second one, the exec-failed record, when execve failed after the report.
 */
function run(argv, options) {
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string')) {
    return Promise.reject(new TypeError('confine.run: argv must be a non-empty array of strings'));
  }
  if (!options || typeof options.worktree !== 'string') {
    return Promise.reject(new TypeError('confine.run: options.worktree (a directory) is required'));
  }
  let launcher;
  try {
    launcher = trustedLauncher(options.confinePath || resolve().path, [options.worktree, ...(options.allow || [])]);
  } catch (e) {
    return Promise.reject(e); // a missing or wrong platform package rejects, like every other failure to start
  }
  const args = ['--worktree', options.worktree];
  for (const a of options.allow || []) args.push('--allow', a);
  if (options.mode) args.push('--mode', options.mode);
  args.push('--report-fd', '3', '--', ...argv);
  return new Promise((resolvePromise, reject) => {
    const child = childProcess.spawn(launcher, args, {
      cwd: options.cwd === undefined ? defaultCwd(options.worktree) : options.cwd,
      env: options.env,
      stdio: [options.stdin || 'ignore', 'pipe', 'pipe', 'pipe'],
      shell: false,
    });
    const out = [], err = [], rep = [];
    child.stdout.on('data', (b) => out.push(b));
    child.stderr.on('data', (b) => err.push(b));
    child.stdio[3].on('data', (b) => rep.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      const lines = Buffer.concat(rep).toString('utf8').split('\n').filter((l) => l.trim() !== '');
      let records;
      try {
        records = lines.map((l) => JSON.parse(l));
      } catch (e) {
        reject(new ConfineError('EREPORT', `confine: the report is not JSON lines (${e.message}): ${lines.join('\n').slice(0, 200)}`));
        return;
      }
      if (records.length > 2) {
        reject(new ConfineError('EREPORT', `confine: ${records.length} records on the report descriptor, at most 2`));
        return;
      }
      const base = { exitCode: code, signal, report: records[0] || null, execFailed: records[1] || null,
        stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') };
      resolvePromise(classify(base));
    });
  });
}

/** Decide the RunResult kind from the exit and the records; never from the command's output. */
function classify(r) {
  // A refusal (command-not-found and command-not-executable are found before anything runs) is in the
  // report; an execve that failed after it, in the exec-failed record.
  const reason = r.execFailed ? r.execFailed.reason
    : r.report && r.report.outcome === 'refused' ? r.report.reason : undefined;
  if (r.signal === null && r.exitCode === REFUSED && reason && !EXEC_REASONS.has(reason)) {
    return { kind: 'refused', reason, ...r };
  }
  if (r.signal === null && (r.exitCode === 126 || r.exitCode === 127) && EXEC_REASONS.has(reason)) {
    return { kind: 'exec-failed', reason, ...r };
  }
  if (r.signal === null && r.exitCode === REFUSED && !(r.report && r.report.outcome === 'exec')) {
    // 125 with no report: confine could not even write one (e.g. a bad --report-fd).
    return { kind: 'refused', reason: 'unknown', ...r };
  }
  return { kind: r.signal === null && r.exitCode === 0 ? 'ok' : 'failed', ...r };
}

module.exports = { resolve, run, trustedLauncher, ConfineError, PACKAGES };
