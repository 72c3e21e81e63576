// Types for @confine-dev/confine (index.js).

/** Thrown by resolve(); run() rejects with it. code: EPLATFORM (not Linux, or an architecture confine does not ship),
 * ENOPKG (the platform package for this host is not installed; the message names it), ENOTELF / EARCH
 * (the installed launcher is not an ELF for this host's machine), EUNTRUSTED (a confined command could have
 * written the launcher: it lies beneath the worktree, an allow root, /tmp or /dev/shm, or it or a directory on
 * its way is owned by another user or writable by group or others), ENOENT (the launcher does not exist),
 * EREPORT (the report is not JSON). */
export declare class ConfineError extends Error {
  readonly code: 'EPLATFORM' | 'ENOPKG' | 'ENOTELF' | 'EARCH' | 'EUNTRUSTED' | 'ENOENT' | 'EREPORT';
}

/** The npm package that carries the launchers of each architecture. */
export declare const PACKAGES: Readonly<{ x64: string; arm64: string }>;

export interface Resolved {
  /** Absolute path of the launcher: bin/confine, or bin/confine-wsl2 on WSL. */
  path: string;
  /** The platform package it came from, e.g. "@confine-dev/confine-linux-x64". */
  package: string;
  /** Node's architecture name of the host it was chosen for ("x64" or "arm64"). */
  arch: 'x64' | 'arm64';
  /** Whether this is WSL; then the Linux guest's architecture (uname -m) decided. */
  wsl: boolean;
}

export interface ResolveOptions {
  /** Directories to resolve the platform package from (require.resolve paths); default: this module's. */
  paths?: string[];
  /** Override the detected host (tests). */
  host?: { arch: 'x64' | 'arm64'; wsl: boolean };
}

/** The launcher for the running host. Throws ConfineError (EPLATFORM, ENOPKG, ENOTELF, EARCH). */
export declare function resolve(options?: ResolveOptions): Resolved;

/** The launcher's real path, checked as run() checks it before every launch: outside writable (the run's
 * worktree and allow roots), /tmp, /dev/shm and every directory a confine profile may grant, by path and under
 * another name (a bind mount: device and inode of the directories on the way, the mounts' roots), with no other hard
 * link, and owned by root or this user and writable by no one else, itself and every directory on its way.
 * Throws ConfineError EUNTRUSTED or ENOENT. */
export declare function trustedLauncher(file: string, writable?: string[]): string;

export interface RunOptions {
  /** The writable root, an absolute, clean, symlink-free directory (confine --worktree). */
  worktree: string;
  /** More writable roots (confine --allow, repeated). */
  allow?: string[];
  mode?: 'workspace-write' | 'read-only';
  /** The command's working directory; default: the worktree. */
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** stdin of the command; default 'ignore'. */
  stdin?: 'ignore' | 'inherit' | 'pipe';
  /** The launcher to use; default resolve().path. Checked like it (trustedLauncher): never inside a writable root. */
  confinePath?: string;
}

/** The report confine writes to fd 3 (schema confine.report/v1, sandbox/README.md). */
export interface Report {
  schema: 'confine.report/v1';
  outcome: 'exec' | 'refused';
  reason?: string;
  error?: string;
  mode: string;
  backend: string;
  abi: number;
  landlock: string;
  command?: string[];
  metadata?: string;
  warnings?: string[];
  [field: string]: unknown;
}

/** The second record on fd 3, written only when execve failed after the report (schema confine.exec-failed/v1,
 * sandbox/README.md). */
export interface ExecFailedRecord {
  schema: 'confine.exec-failed/v1';
  outcome: 'exec-failed';
  reason: 'command-not-found' | 'command-not-executable' | 'wrong-arch' | 'interpreter-missing';
  error: string;
  [field: string]: unknown;
}

interface RunBase {
  /** The exit status, or null when the command died by a signal. */
  exitCode: number | null;
  /** The signal that ended the command (e.g. "SIGKILL"), or null. */
  signal: NodeJS.Signals | null;
  /** The report, or null when confine wrote none. */
  report: Report | null;
  /** The exec-failed record, or null when execve did not fail after the report. */
  execFailed: ExecFailedRecord | null;
  stdout: string;
  stderr: string;
}

/** How the run ended:
 * - "ok": the command ran confined and exited 0;
 * - "failed": the command ran and exited non-zero or died by a signal (its own status or signal);
 * - "refused": confine refused (exit 125) and nothing ran; reason is the report's reason code;
 * - "exec-failed": confine could not execute the command (126/127; reason command-not-found,
 *   command-not-executable, wrong-arch or interpreter-missing). */
export type RunResult =
  | (RunBase & { kind: 'ok' | 'failed' })
  | (RunBase & { kind: 'refused'; reason: string })
  | (RunBase & { kind: 'exec-failed'; reason: ExecFailedRecord['reason'] });

/** Run argv (never joined into a shell string) under confine, reading the report from fd 3. */
export declare function run(argv: string[], options: RunOptions): Promise<RunResult>;
