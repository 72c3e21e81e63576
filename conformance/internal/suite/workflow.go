package suite

// The workflow family (issue 15): the everyday operations of a developer or an agent in its worktree, each run
// as the real tool runs it (git, touch, chmod, tar, cp, Python's shutil), once as confine picks its mode and once
// where no user or mount namespace can be made (internal/nsdeny: the fallback). Each operation changes metadata
// (modes, times, owners, xattrs) as a side effect, which is what the old fallback (seccomp-deny) denied inside
// the worktree too. The cases judge by the launch's report.metadata:
//
//	mount-layer, supervisor  the operation succeeds and its modes and times are right
//	seccomp-deny             the launchers before issue 15: the operation fails with EPERM ("Operation not
//	                         permitted"), or succeeds without its metadata; PASS, with the note in the log
//
// In every mode the same tool is also aimed at the outside tree, where it must fail, and the invariant snapshot
// checks that nothing outside changed (the outside tree is under the scratch directory, never under /tmp).

import (
	"archive/tar"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// workflow is one everyday operation; it yields two cases, NAME and NAME-fallback.
type workflow struct {
	name, title, rationale, effect string
	tools                          []string // executables the case needs on PATH besides /bin/sh (git, python3)
	setup                          func(t *T)
	// script returns the shell script that performs the operation in the worktree (the command's cwd), and the
	// one that aims the same tool at the outside tree (it must fail there).
	script func(t *T) (inside, outside string)
	// verify checks the operation's effects after a successful run, and returns what is wrong ("" when right).
	verify func(t *T) string
	env    func(t *T) []string // the command's environment (nil: the runner's)
}

func (w workflow) cases() []Case {
	mk := func(fallback bool) Case {
		id, title, rat := "workflow/"+w.name, w.title, w.rationale
		supervised := Expect{"ABI ≥ 1, supervisor", "exit 0; " + w.effect}
		old := Expect{"ABI ≥ 1, seccomp-deny (launchers before issue 15)", "PASS with a note: the operation fails with \"Operation not permitted\" (or succeeds without its metadata)"}
		exp := []Expect{{"ABI ≥ 1, mount-layer", "exit 0; " + w.effect}, supervised, old}
		if fallback {
			id += "-fallback"
			title += ", where no namespace can be had"
			rat += " This case runs confine where no user or mount namespace can be made (internal/nsdeny, as a " +
				"container's seccomp profile or Ubuntu's AppArmor user-namespace restriction does), so the launcher " +
				"falls back: to its supervisor (issue 15), under which the operation must work as it does " +
				"unconfined, or, on launchers before it, to seccomp-deny, under which it fails."
			supervised.Result = "a warning; " + supervised.Result
			exp = []Expect{supervised, old}
		}
		exp = append(exp, Expect{"any", "the same tool aimed at the outside tree fails; nothing outside changes"})
		if len(w.tools) > 0 {
			exp = append(exp, Expect{"`" + strings.Join(w.tools, "`, `") + "` absent", "SKIP, with the reason"})
		}
		exp = append(exp, noLandlockRowFor(fallback))
		return Case{ID: id, Title: title, Rationale: rat, Expect: exp,
			Needs: Needs{Confined: !fallback, Landlock: fallback, Shell: true, Tools: w.tools}, Setup: w.setup,
			Run: func(t *T) { w.run(t, fallback) }}
	}
	return []Case{mk(false), mk(true)}
}

// notPermitted is strerror(EPERM) as glibc, musl and busybox print it, and Python's PermissionError.
const notPermitted = "Operation not permitted"

func (w workflow) run(t *T, fallback bool) {
	inside, outside := w.script(t)
	var env []string
	if w.env != nil {
		env = w.env(t)
	}
	o := Opts{Dir: t.WT, Env: env, NoNamespaces: fallback}
	r := t.Confine(t.Flags(), []string{"/bin/sh", "-c", "umask 022; " + inside}, o)
	if r.Report == nil {
		t.Fatalf("no report on --report-fd (exit %d, stderr %q)", r.Exit, r.Stderr)
	}
	if r.Report.Outcome != "exec" {
		t.Fatalf("confine did not run the command: %s %s: %s", r.Report.Outcome, r.Report.Reason, r.Report.Error)
	}
	m := r.Report.Metadata
	if fallback {
		t.WantFallback(r)
	}
	t.Logf("report.metadata %q: inside the worktree: exit %d, stderr %q", m, r.Exit, firstLines(r.Stderr, 4))
	switch {
	case r.Report.MetadataInside():
		if r.Exit != 0 {
			t.Errorf("%s: the operation failed in the worktree (exit %d): %s", m, r.Exit, firstLines(r.Stderr, 4))
		} else if msg := w.verify(t); msg != "" {
			t.Errorf("%s: the operation succeeded but %s", m, msg)
		}
	case m == "seccomp-deny":
		// The old fallback: metadata changes are denied inside the worktree too. The operation fails with EPERM,
		// or (a tool that ignores a failed utime or chmod) succeeds without its metadata; either is the documented
		// behaviour of that mode, and the case says which. A failure for another reason is a FAIL.
		switch {
		case r.Exit != 0 && strings.Contains(r.Stdout+r.Stderr, notPermitted):
			t.Logf("note: seccomp-deny (the fallback before issue 15) denies metadata changes inside the worktree: "+
				"the operation failed with %q, as expected in that mode", notPermitted)
		case r.Exit != 0:
			t.Errorf("seccomp-deny: the operation failed (exit %d) without %q: %s", r.Exit, notPermitted, firstLines(r.Stderr, 4))
		default:
			msg := w.verify(t)
			if msg == "" {
				msg = "its effects are all there"
			}
			t.Logf("note: seccomp-deny: the operation exited 0 (the tool ignores a denied metadata call): %s", msg)
		}
	default:
		t.Errorf("report.metadata %q, want mount-layer, supervisor or seccomp-deny", m)
	}
	// The same tool aimed at the outside tree: it must fail (the invariant snapshot shows nothing changed).
	if outside != "" {
		ro := t.Confine(t.Flags(), []string{"/bin/sh", "-c", "umask 022; " + outside}, o)
		t.Logf("aimed at the outside tree: exit %d, stderr %q", ro.Exit, firstLines(ro.Stderr, 3))
		if ro.Exit == 0 {
			t.Errorf("%s: the operation aimed at the outside tree exited 0: %s", m, outside)
		}
	}
}

// firstLines returns at most n lines of s, for logs: the first n/2 and the last n/2 (a Python traceback's error
// is its last line).
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(append(lines[:n/2:n/2], "…"), lines[len(lines)-n/2:]...)
	}
	return strings.Join(lines, " | ")
}

// Fixed times of the fixtures (UTC): far from the run's clock, so that a time that was not set shows.
var (
	wfTime1 = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	wfTime2 = time.Date(2002, 3, 4, 5, 6, 7, 0, time.UTC) // touch -t 200203040506.07 (TZ=UTC)
	wfTime3 = time.Date(2003, 4, 5, 6, 7, 8, 123456789, time.UTC)
)

// setTimes sets a fixture's atime and mtime (unconfined).
func setTimes(t *T, path string, at time.Time) {
	ts := unix.NsecToTimespec(at.UnixNano())
	if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		t.Fatalf("fixture: utimensat %s: %v", path, err)
	}
}

// statOf returns path's mode bits and mtime, or "" and an error text.
func statOf(path string) (uint32, time.Time, string) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0, time.Time{}, fmt.Sprintf("%s: %v", path, err)
	}
	return st.Mode & 0o7777, time.Unix(st.Mtim.Sec, st.Mtim.Nsec), ""
}

// wantModeTime returns "" when path has mode and (when !at.IsZero()) mtime at, to the second or, exact, to the
// nanosecond; else what differs.
func wantModeTime(path string, mode uint32, at time.Time, exact bool) string {
	m, mt, err := statOf(path)
	switch {
	case err != "":
		return err
	case m != mode:
		return fmt.Sprintf("%s has mode %04o, want %04o", path, m, mode)
	case at.IsZero():
		return ""
	case exact && !mt.Equal(at):
		return fmt.Sprintf("%s has mtime %s, want %s", path, mt.UTC().Format(time.RFC3339Nano), at.UTC().Format(time.RFC3339Nano))
	case !exact && mt.Unix() != at.Unix():
		return fmt.Sprintf("%s has mtime %s, want %s", path, mt.UTC().Format(time.RFC3339), at.UTC().Format(time.RFC3339))
	}
	return ""
}

func firstProblem(msgs ...string) string {
	for _, m := range msgs {
		if m != "" {
			return m
		}
	}
	return ""
}

// tarEntry is one member of the workflow archive.
type tarEntry struct {
	name string
	mode uint32
	at   time.Time
	body string
}

var wfArchive = []tarEntry{
	{"pkg/", 0o750, wfTime1, ""},
	{"pkg/run.sh", 0o755, wfTime2, "#!/bin/sh\necho run\n"},
	{"pkg/data.txt", 0o640, wfTime1, "data\n"},
	{"pkg/private.key", 0o600, wfTime3, "secret\n"},
}

// writeArchive writes wfArchive as a ustar archive owned by the runner's uid and gid (a tar run as root restores
// owners: a no-op change that still needs the chown call).
func writeArchive(t *T, path string) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range wfArchive {
		h := &tar.Header{Name: e.name, Mode: int64(e.mode), ModTime: e.at, Uid: os.Getuid(), Gid: os.Getgid(), Format: tar.FormatUSTAR}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("fixture: tar: %v", err)
		}
		if _, err := tw.Write([]byte(e.body)); err != nil {
			t.Fatalf("fixture: tar: %v", err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("fixture: tar: %v", err)
	}
	t.WriteFile(path, b.String(), 0o644)
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// wfGitEnv is git's environment for the workflow: a HOME of its own (in the worktree, writable), an identity, no
// system config, no automatic gc.
func wfGitEnv(t *T) []string {
	return append(os.Environ(), "HOME="+t.WT+"/.home", "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=conformance",
		"GIT_AUTHOR_EMAIL=c@example.invalid", "GIT_COMMITTER_NAME=conformance", "GIT_COMMITTER_EMAIL=c@example.invalid",
		"GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=gc.auto", "GIT_CONFIG_VALUE_0=0",
		"GIT_CONFIG_KEY_1=maintenance.auto", "GIT_CONFIG_VALUE_1=false")
}

// python3Path is the python3 the case runs (resolved by the runner, so that an unreadable PATH entry, such as a
// pyenv shim under root's home when the suite runs as nobody, does not decide).
func python3Path() string { p, _ := exec.LookPath("python3"); return p }

var workflows = []workflow{{
	name:  "git",
	title: "git init, add -A, commit and checkout -b in a fresh worktree",
	rationale: "git init writes .git/config through a lock file that it chmods, and records executable bits; this " +
		"is the first thing an agent does in an empty worktree, and it failed under the old fallback (`chmod on " +
		".git/config.lock failed: Operation not permitted`). The command runs git init -b main, adds a tree with " +
		"an executable script and a subdirectory (add -A), commits, then checkout -b topic and a second commit. " +
		"The runner checks, without confine, that there are two commits, HEAD is topic, and the script is " +
		"recorded 100755. Aimed at the outside tree, git init must fail.",
	effect: "two commits on branch topic; the script recorded as 100755",
	tools:  []string{"git"},
	setup: func(t *T) {
		t.Mkdir(t.WT + "/.home")
		t.WriteFile(t.WT+"/tool.sh", "#!/bin/sh\necho tool\n", 0o755)
		t.WriteFile(t.WT+"/sub/readme.txt", "readme\n", 0o644)
	},
	env: wfGitEnv,
	script: func(t *T) (string, string) {
		return `git init -q -b main . && git add -A && git commit -q -m one && git checkout -q -b topic && ` +
				`echo two > two.txt && git add -A && git commit -q -m two`,
			`git init -q ` + shellQuote(t.Out+"/dir")
	},
	verify: func(t *T) string {
		git := func(args ...string) string {
			cmd := exec.Command("git", append([]string{"-C", t.WT}, args...)...)
			cmd.Env = wfGitEnv(t)
			out, err := cmd.CombinedOutput()
			if err != nil {
				return "<git " + strings.Join(args, " ") + ": " + err.Error() + ": " + strings.TrimSpace(string(out)) + ">"
			}
			return strings.TrimSpace(string(out))
		}
		if n := git("rev-list", "--count", "HEAD"); n != "2" {
			return "rev-list --count HEAD is " + n + ", want 2"
		}
		if b := git("rev-parse", "--abbrev-ref", "HEAD"); b != "topic" {
			return "HEAD is " + b + ", want topic"
		}
		if s := git("ls-files", "-s", "tool.sh"); !strings.HasPrefix(s, "100755 ") {
			return "tool.sh is recorded as " + s + ", want 100755"
		}
		return ""
	},
}, {
	name:  "touch",
	title: "touch creates a file, updates an old one's times, and sets an explicit time",
	rationale: "touch sets times (utimensat) on every call, also on a file it just created, and build tools rely " +
		"on it; under the old fallback it failed with \"setting times\". The command runs touch on a new file, " +
		"on a file whose mtime is 2001, and touch -t 200203040506.07 (TZ=UTC); the runner checks that the new " +
		"file exists, the old file's mtime moved past 2001, and the explicit time is exact to the second. Aimed " +
		"at an outside file, touch must fail.",
	effect: "the new file exists; the 2001 file's mtime is newer; the explicit mtime is 2002-03-04T05:06:07Z",
	setup: func(t *T) {
		t.WriteFile(t.WT+"/old.txt", "old\n", 0o644)
		setTimes(t, t.WT+"/old.txt", wfTime1)
	},
	script: func(t *T) (string, string) {
		return `touch new.txt && touch old.txt && TZ=UTC touch -t 200203040506.07 stamp.txt`,
			`touch ` + shellQuote(t.Out+"/file.txt") + ` && TZ=UTC touch -t 200203040506.07 ` + shellQuote(t.Out+"/file.txt")
	},
	verify: func(t *T) string {
		if _, _, err := statOf(t.WT + "/new.txt"); err != "" {
			return err
		}
		if _, mt, _ := statOf(t.WT + "/old.txt"); !mt.After(wfTime1) {
			return fmt.Sprintf("old.txt's mtime is still %s", mt.UTC().Format(time.RFC3339))
		}
		return wantModeTime(t.WT+"/stamp.txt", 0o644, wfTime2, false)
	},
}, {
	name:  "chmod-x",
	title: "chmod +x makes a script executable, and it runs",
	rationale: "Generated scripts, downloaded tools and git checkouts of executables all need chmod +x; under the " +
		"old fallback it failed with EPERM in the worktree. The command runs chmod +x on a 0644 script (umask " +
		"022) and then runs it; the runner checks the mode is 0755 and the script's output. Aimed at an outside " +
		"file, chmod +x must fail.",
	effect: "the script is 0755 and runs",
	setup: func(t *T) {
		t.WriteFile(t.WT+"/tool.sh", "#!/bin/sh\necho tool-ran\n", 0o644)
	},
	script: func(t *T) (string, string) {
		return `chmod +x tool.sh && ./tool.sh > tool.out`, `chmod +x ` + shellQuote(t.Out+"/file.txt")
	},
	verify: func(t *T) string {
		b, err := os.ReadFile(t.WT + "/tool.out")
		if err != nil || string(b) != "tool-ran\n" {
			return fmt.Sprintf("the script's output is %q (%v), want %q", b, err, "tool-ran\n")
		}
		return wantModeTime(t.WT+"/tool.sh", 0o755, time.Time{}, false)
	},
}, {
	name:  "tar-x",
	title: "tar x restores the archived modes and mtimes",
	rationale: "Unpacking an archive (a release tarball, an npm or pip package) sets each member's mode and mtime " +
		"(and, as root, its owner); under the old fallback tar failed with \"Cannot utime\". The archive (an " +
		"outside file, read-only to the command) holds a 0750 directory and 0755, 0640 and 0600 files with " +
		"mtimes in 2001-2003; the command extracts it into the worktree and the runner checks each member's mode, " +
		"and each file's mtime to the second (directory mtimes are not compared: busybox tar does not restore " +
		"them). Extracting into the outside tree must fail.",
	effect: "each member has its archived mode, each file its archived mtime",
	setup:  func(t *T) { writeArchive(t, t.Out+"/pkg.tar") },
	script: func(t *T) (string, string) {
		return `tar -xf ` + shellQuote(t.Out+"/pkg.tar"), `tar -xf ` + shellQuote(t.Out+"/pkg.tar") + ` -C ` + shellQuote(t.Out+"/dir")
	},
	verify: func(t *T) string {
		for _, e := range wfArchive {
			at := e.at
			if strings.HasSuffix(e.name, "/") {
				at = time.Time{}
			}
			if msg := wantModeTime(t.WT+"/"+strings.TrimSuffix(e.name, "/"), e.mode, at, false); msg != "" {
				return msg
			}
		}
		return ""
	},
}, {
	name:  "cp-p",
	title: "cp -p keeps mode and times, from the worktree and from outside",
	rationale: "cp -p (and install, rsync -a) copy a file and then set its mode, owner and times; under the old " +
		"fallback that failed. The command copies a 0751 worktree file with a 2001 mtime, and an outside 0640 " +
		"file with a 2003 mtime (reading outside is allowed), into the worktree with cp -p; the runner checks " +
		"both copies' modes and mtimes (to the second). Copying with cp -p into the outside tree must fail.",
	effect: "both copies have their source's mode and mtime",
	setup: func(t *T) {
		t.WriteFile(t.WT+"/src.bin", "src\n", 0o751)
		setTimes(t, t.WT+"/src.bin", wfTime1)
		setTimes(t, t.Out+"/file.txt", wfTime3)
	},
	script: func(t *T) (string, string) {
		return `cp -p src.bin copy.bin && cp -p ` + shellQuote(t.Out+"/file.txt") + ` ext-copy.txt`,
			`cp -p src.bin ` + shellQuote(t.Out+"/dir/copy.bin")
	},
	verify: func(t *T) string {
		return firstProblem(wantModeTime(t.WT+"/copy.bin", 0o751, wfTime1, false),
			wantModeTime(t.WT+"/ext-copy.txt", 0o640, wfTime3, false))
	},
}, {
	name:  "shutil-copy2",
	title: "Python's shutil.copy2 keeps mode, nanosecond times and xattrs",
	rationale: "shutil.copy2 is how Python tools (pip, build backends, test fixtures) copy files: it copies the " +
		"data, then the xattrs, the times (os.utime with nanoseconds) and the mode; under the old fallback it " +
		"raised PermissionError. The command copies a 0751 worktree file (mtime 2001, user.conformance xattr " +
		"where the file system has user xattrs) and the outside 0640 file (mtime 2003.123456789) into the " +
		"worktree; the runner checks modes, exact mtimes and the copied xattr. shutil.copystat onto the " +
		"outside file must fail (the VM guest has python3 and the modules this imports: vm/kernels.json guest_tools).",
	effect: "both copies have their source's mode, mtime to the nanosecond, and user xattr",
	tools:  []string{"python3"},
	setup: func(t *T) {
		t.WriteFile(t.WT+"/src.bin", "src\n", 0o751)
		_ = unix.Setxattr(t.WT+"/src.bin", "user.conformance", []byte("copied"), 0)
		setTimes(t, t.WT+"/src.bin", wfTime1)
		setTimes(t, t.Out+"/file.txt", wfTime3)
	},
	script: func(t *T) (string, string) {
		py := shellQuote(python3Path())
		return py + ` -c 'import shutil, sys; shutil.copy2("src.bin", "copy.bin"); shutil.copy2(sys.argv[1], "ext-copy.txt")' ` +
				shellQuote(t.Out+"/file.txt"),
			py + ` -c 'import shutil, sys; shutil.copystat("src.bin", sys.argv[1])' ` + shellQuote(t.Out+"/file.txt")
	},
	verify: func(t *T) string {
		msg := firstProblem(wantModeTime(t.WT+"/copy.bin", 0o751, wfTime1, true),
			wantModeTime(t.WT+"/ext-copy.txt", 0o640, wfTime3, true))
		if msg != "" {
			return msg
		}
		for _, p := range [][2]string{{t.WT + "/src.bin", t.WT + "/copy.bin"}, {t.Out + "/file.txt", t.WT + "/ext-copy.txt"}} {
			if src := getxattr(p[0], "user.conformance"); !strings.HasPrefix(src, "<") {
				if dst := getxattr(p[1], "user.conformance"); dst != src {
					return fmt.Sprintf("%s has user.conformance %q, its source %q", p[1], dst, src)
				}
			}
		}
		return ""
	},
}}

var workflowCases = func() []Case {
	var cs []Case
	for _, w := range workflows {
		cs = append(cs, w.cases()...)
	}
	return cs
}()
