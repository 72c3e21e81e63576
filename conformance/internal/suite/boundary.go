package suite

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

// noLandlockRow is the row of a case that holds under both backends: where Landlock is absent or disabled the
// suite's commands run under bwrap (report.backend bwrap), and only without bwrap too does confine refuse them.
var noLandlockRow = Expect{"no Landlock", "under bwrap (the guest and most hosts have it): as in the rows above with the mount layer, and EROFS for every denied write; without bwrap, SKIP (fail-closed family)"}

// fallbackOnly is the row of a case that runs confine where no namespace can be had (internal/nsdeny): bwrap
// cannot run there, so without Landlock confine has no backend and refuses (fail-closed/bwrap-no-namespaces).
var fallbackOnly = Expect{"no Landlock", "SKIP: without namespaces bwrap cannot run, and without Landlock nothing else can enforce (fail-closed/bwrap-no-namespaces)"}

// needsFallback are the needs of a case's variant: where no namespace can be had (fallback) only Landlock can
// confine, else either backend.
func needsFallback(fallback bool) Needs { return Needs{Confined: !fallback, Landlock: fallback} }

// noLandlockRowFor is a variant's row for kernels without Landlock.
func noLandlockRowFor(fallback bool) Expect {
	if fallback {
		return fallbackOnly
	}
	return noLandlockRow
}

var boundaryCases = []Case{{
	ID:    "boundary/write-inside",
	Title: "every kind of write inside the worktree succeeds",
	Rationale: "A sandbox that denies too much gets turned off. Creating, writing, appending, truncating on open, " +
		"making and removing directories, renaming and hard-linking within one directory, symlinks and FIFOs " +
		"inside the worktree must all work on every ABI, and their effects must be visible afterwards.",
	Expect: []Expect{{"ABI ≥ 1", "every op succeeds; the files hold what was written"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		w := t.WT
		res := t.Helper(t.Flags(),
			opArg("create", w+"/new.txt", "x"), opArg("write", w+"/existing.txt", "abc"),
			opArg("append", w+"/existing.txt", "d"), op("trunc-open", w+"/sub/../existing.txt"),
			op("mkdir", w+"/newdir"), op2("rename", w+"/new.txt", w+"/renamed.txt"),
			op2("link", w+"/renamed.txt", w+"/hard.txt"), op2("symlink", w+"/sym", "renamed.txt"),
			op("mkfifo", w+"/fifo"), op("unlink", w+"/hard.txt"), op("rmdir", w+"/newdir"),
			opArg("create", w+"/sub/deep.txt", "y"))
		t.WantOK("inside the worktree", res...)
		wantContent(t, w+"/renamed.txt", "x")
		wantContent(t, w+"/existing.txt", "")
		wantContent(t, w+"/sub/deep.txt", "y")
		for _, gone := range []string{w + "/hard.txt", w + "/newdir", w + "/new.txt"} {
			if Exists(gone) {
				t.Errorf("%s still exists after its removal reported success", gone)
			}
		}
	},
}, {
	ID:    "boundary/write-outside-denied",
	Title: "write, create, remove, rename and link outside the worktree are denied by the kernel",
	Rationale: "The core promise. Each write-class syscall aimed outside the writable set, including moves and hard " +
		"links between the worktree and the outside (a hard link into the worktree would make an outside file " +
		"writable through it), must fail, and the outside tree must be byte-for-byte and inode-for-inode " +
		"unchanged. Under confine's mount layer (report.metadata mount-layer) everything outside is a read-only " +
		"mount, so most ops fail with EROFS before Landlock is asked; Landlock's EACCES is accepted too, and " +
		"EXDEV for a cross-directory rename or link refused on REFER. A read-only mount does not stop a write " +
		"into a FIFO (nor into a device node), so the outside FIFO's write must fail with EACCES: that is " +
		"Landlock's verdict, whatever the layer. A control run of each op without confine, in a copy of the " +
		"tree, proves the denial is confine's, not the file system's. Under bwrap (report.backend bwrap) every " +
		"op but the FIFO write must fail with EROFS (EXDEV for a move across the bind), and the FIFO is judged " +
		"by boundary/fifo-outside.",
	Expect: []Expect{{"ABI ≥ 1", "every op fails with EACCES or EROFS (EXDEV allowed for cross-directory rename/link); the FIFO write with EACCES; nothing outside changes"},
		{"bwrap (no Landlock, or --backend bwrap)", "every op but the FIFO write fails with EROFS (EXDEV for a cross-directory rename/link); nothing outside changes"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: controlWriteOps,
	Run: func(t *T) {
		same, cross := writeOps(t.Out, t.WT)
		r, res := t.HelperRun(t.Flags(), Opts{}, append(same, cross...)...)
		t.WantBackend(r)
		if t.Bwrap() {
			for i, x := range res {
				switch {
				case x.Op == "fifo-write":
					t.Logf("bwrap: the FIFO write outside: %s (judged by boundary/fifo-outside)", errnoOf(x))
				case i < len(same):
					t.WantDenied("bwrap: outside the worktree", erofs, x)
				default:
					t.WantDenied("bwrap: across the boundary", erofsExdev, x)
				}
			}
			return
		}
		t.WantDenied("outside the worktree", denied, res[:len(same)]...)
		t.WantDenied("across the boundary", deniedX, res[len(same):]...)
		for _, x := range res {
			if x.Op == "fifo-write" {
				t.WantDenied("a FIFO outside (a read-only mount does not stop it; Landlock must)", eacces, x)
			}
		}
	},
}, {
	ID:    "boundary/fifo-outside",
	Title: "a FIFO outside the writable set cannot be opened for writing",
	Rationale: "A FIFO is a file-system name for a pipe to whatever process reads it: a tool's control FIFO, " +
		"or init's /run/initctl as root. Writing into one changes no file, so no snapshot sees it, yet it hands " +
		"data to a process outside the sandbox. A read-only mount does not stop the open (nor does nodev): " +
		"Landlock's WRITE_FILE does, with EACCES, under every metadata mode. bwrap's read-only binds alone do " +
		"not, so under bwrap the launcher must deny it some other way, or report it as an open channel (the " +
		"report then names fifo in its warnings or channels). The control proves the FIFO is writable without " +
		"confine.",
	Expect: []Expect{{"ABI ≥ 1", "the FIFO write outside fails with EACCES"},
		{"bwrap (no Landlock, or --backend bwrap)", "the FIFO write outside fails (any errno), or succeeds and the report names FIFOs as reachable"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: func(t *T) { // the control, in a copy of the tree: the invariant watches this one's FIFO
		if !t.ControlEach(func(out, _ string) []helper.Op { return []helper.Op{opArg("fifo-write", out+"/fifo", "x")} })[0] {
			t.Fatalf("control: writing into the FIFO fails without confine")
		}
	},
	Run: func(t *T) {
		fifo := t.Out + "/fifo"
		r, res := t.HelperRun(t.Flags(), Opts{}, opArg("fifo-write", fifo, "x"))
		t.WantBackend(r)
		if !t.Bwrap() {
			t.WantDenied("a FIFO outside (a read-only mount does not stop it; Landlock must)", eacces, res[0])
			return
		}
		if !res[0].OK {
			t.Logf("bwrap: the FIFO write outside fails with %s", res[0].Errno)
			return
		}
		if r.Report != nil {
			said := strings.Join(r.Report.Warnings, "\n")
			for name, c := range r.Report.Channels {
				if c.Status == "open" {
					said += "\n" + name + ": " + c.How
				}
			}
			if strings.Contains(strings.ToLower(said), "fifo") {
				t.Logf("bwrap: the FIFO write outside succeeds, and the report says so: %s", said)
				return
			}
		}
		t.Errorf("bwrap: the write into the FIFO outside (%s) succeeded, and the report names no such channel: "+
			"a confined command can feed any FIFO it can open (as root, /run/initctl)", fifo)
	},
}, {
	ID:    "boundary/write-outside-landlock-only",
	Title: "where confine cannot build its mount layer, Landlock alone denies every write outside with EACCES",
	Rationale: "The mount layer answers EROFS before Landlock is asked, so the other boundary cases cannot tell " +
		"whether Landlock holds the boundary on its own. Here confine runs where no user or mount namespace can " +
		"be made (a seccomp filter answers EPERM to unshare and clone with CLONE_NEWUSER or CLONE_NEWNS, as a " +
		"container's profile does). confine must fall back, say so (report.metadata supervisor, or seccomp-deny " +
		"on launchers before issue 15, and a warning), " +
		"and the same outside writes must each fail with Landlock's EACCES (EXDEV for a cross-directory rename " +
		"or link refused on REFER), with nothing outside changed.",
	Expect: []Expect{{"ABI ≥ 1", "report.metadata supervisor or seccomp-deny, with a warning; every op fails with EACCES (EXDEV allowed for cross-directory rename/link)"}, fallbackOnly},
	Needs:  Needs{Landlock: true},
	Setup:  controlWriteOps,
	Run: func(t *T) {
		same, cross := writeOps(t.Out, t.WT)
		r, res := t.HelperRun(t.Flags(), Opts{NoNamespaces: true}, append(same, cross...)...)
		t.WantFallback(r)
		t.WantDenied("outside the worktree (Landlock alone)", eacces, res[:len(same)]...)
		t.WantDenied("across the boundary (Landlock alone)", eaccesExdev, res[len(same):]...)
	},
}, {
	ID:    "boundary/shell-outside-denied",
	Title: "a shell's writes outside fail at the kernel, whatever the spelling of the path",
	Rationale: "Wrappers that filter command strings are no boundary: the path can come from a variable, a glob or " +
		"a cd. This case runs /bin/sh with redirections, rm -fr, mv, mkdir, ln and a cd into the outside tree, " +
		"and requires every one to fail while the same script aimed at the worktree succeeds (the control that " +
		"the script can write at all).",
	Expect: []Expect{{"ABI ≥ 1", "inside: the script's writes land; outside: each fails ('Permission denied', or 'Read-only file system' under the mount layer), nothing changes"}, noLandlockRow},
	Needs:  Needs{Confined: true, Shell: true},
	Run: func(t *T) {
		script := `D=$1; echo x > "$D/new"; echo x >> "$D/file.txt"; rm -fr "$D/dir"; mv "$D/link" "$D/moved";` +
			` mkdir "$D/made"; ln -s file.txt "$D/sym"; cd "$D" && true > file.txt; cd "$D" && echo y > ./made2; echo done`
		in := t.Confine(t.Flags(), []string{"/bin/sh", "-c", script, "sh", t.WT}, Opts{})
		if in.Exit != 0 || !strings.Contains(in.Stdout, "done") {
			t.Fatalf("control inside the worktree: exit %d, stdout %q, stderr %q", in.Exit, in.Stdout, in.Stderr)
		}
		if !Exists(t.WT+"/new") || !Exists(t.WT+"/made") {
			t.Errorf("control inside the worktree: the script's files are missing")
		}
		out := t.Confine(t.Flags(), []string{"/bin/sh", "-c", script, "sh", t.Out}, Opts{})
		if !strings.Contains(out.Stdout, "done") {
			t.Errorf("outside: script did not finish: exit %d, stderr %q", out.Exit, out.Stderr)
		}
		low := strings.ToLower(out.Stderr)
		if n := strings.Count(low, "permission denied") + strings.Count(low, "read-only file system"); n < 5 {
			t.Errorf("outside: %d 'Permission denied'/'Read-only file system' errors, want at least 5 (stderr %q)", n, out.Stderr)
		}
	},
}, {
	ID:    "boundary/metadata-denied",
	Title: "every chmod, chown, utimes and xattr route, by path and by descriptor, is denied outside; inside it follows report.metadata",
	Rationale: "Landlock has no right for metadata, so on its own it would let a confined command chmod, chown, " +
		"touch or set xattrs on any file it can reach, outside included (a chmod +x on a hook, a timestamp that " +
		"fools make). confine closes this one of three ways, and the report says which (report.metadata): " +
		"read-only mounts for everything outside the writable roots (mount-layer), where these calls fail with " +
		"EROFS outside and work inside; where no mount namespace can be made, a supervisor that performs each " +
		"change beneath a writable root for the command and denies the rest with EPERM (supervisor, issue 15); or " +
		"a seccomp filter that denies them everywhere with EPERM (seccomp-deny). Every route is tried: the chmod, " +
		"chown, utimes and xattr families by path (the legacy calls where the architecture has them), relative to " +
		"a directory descriptor, and on a descriptor the command opened read-only itself (fchmod, fchown, " +
		"futimens, fsetxattr, fremovexattr, AT_EMPTY_PATH). Inside, each route has its own file and its effect " +
		"(mode, owner, times, xattr) is checked. A control run of each route without confine shows it works on " +
		"this file system; the invariant snapshot shows that nothing outside changed (mode, owner, times, ctime, " +
		"xattrs). Owner changes are to uid:gid 1:1 as root, to the caller's own ids otherwise (then only the ctime " +
		"would show a change outside).",
	Expect: []Expect{{"ABI ≥ 1, mount-layer (root, or user namespaces allowed)", "outside: EROFS (EPERM/EACCES accepted); inside: each route succeeds with its effect"},
		{"ABI ≥ 1, supervisor", "outside: EPERM; inside: each route succeeds with its effect; report.seccomp names the chmod, chown and setxattr calls"},
		{"ABI ≥ 1, seccomp-deny", "EPERM for each route, inside and outside; report.seccomp names the chmod, chown and setxattr calls"},
		{"a route the kernel or architecture lacks (legacy calls on arm64, fchmodat2 before 6.6), or xattrs the file system lacks", "the control's errno (ENOSYS, EOPNOTSUPP) is accepted"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: metadataSetup,
	Run:   func(t *T) { runMetadata(t, false) },
}, {
	ID:    "boundary/metadata-fallback",
	Title: "where no mount namespace can be made, every metadata route is denied outside and, under the supervisor, works inside",
	Rationale: "The mount layer needs a mount namespace (root, or unprivileged user namespaces). In a container " +
		"whose seccomp profile forbids namespaces, on a host with user namespaces turned off, or on Ubuntu 24.04 " +
		"where a user namespace has no capabilities, confine must fall back to something as strict outside, and " +
		"say so (a warning). The fallback of issue 15 is the supervisor (report.metadata supervisor): the " +
		"launcher performs each metadata change beneath a writable root for the command and answers EPERM " +
		"outside, so everyday tools work in the worktree. The launchers before it, and any launcher that cannot " +
		"get a seccomp listener, deny every metadata call everywhere with EPERM (seccomp-deny). The case takes " +
		"namespaces away with a seccomp filter of its own (EPERM to unshare and clone with CLONE_NEWUSER or " +
		"CLONE_NEWNS), so the fallback is checked on every kernel, and runs the same routes as " +
		"boundary/metadata-denied: by path, relative to a directory descriptor and on a descriptor the command " +
		"opened read-only, outside and inside.",
	Expect: []Expect{{"ABI ≥ 1, supervisor", "a warning; outside: EPERM for each route; inside: each route succeeds with its effect; report.seccomp names the chmod, chown and setxattr calls"},
		{"ABI ≥ 1, seccomp-deny (launchers before issue 15)", "a warning; EPERM for each route inside and outside; report.seccomp names the chmod, chown and setxattr calls"},
		{"a route the kernel or architecture lacks, or xattrs the file system lacks", "the control's errno (ENOSYS, EOPNOTSUPP) is accepted"}, fallbackOnly},
	Needs: Needs{Landlock: true},
	Setup: metadataSetup,
	Run:   func(t *T) { runMetadata(t, true) },
}, {
	ID:    "boundary/mount-table-denied",
	Title: "the command cannot make the read-only mounts writable: open_tree and open_tree_attr clones, remount, mount_setattr, umount",
	Rationale: "The mount layer is read-only bind mounts in a mount namespace confine made; a command that could " +
		"change them would get the outside back for metadata calls (which Landlock does not cover), and under " +
		"bwrap for writes too. The command tries what the mount API gives: a clone of the outside file's " +
		"directory by open_tree (5.2) made read-write by mount_setattr (5.12), one by open_tree_attr (6.15, within " +
		"ABI step 6, so the case runs on every kernel), and, in the VM guest or with --destructive only, a remount " +
		"of the file's mount read-write, mount_setattr clearing MOUNT_ATTR_RDONLY, and umount2 of it (where " +
		"confine fails to deny them they change a mount table, the host's in the fallback, which shares the " +
		"runner's). After each it appends to the outside file and chmods it 0604 through what it got. Any mount " +
		"step that succeeds FAILs the case, as does any change to the file's content or mode (and the invariant " +
		"snapshot checks everything else). Without confine, as root in a mount namespace of its own, each of " +
		"these steps on its own makes a read-only bind mount writable.",
	Expect: []Expect{{"ABI ≥ 1", "every mount step fails (EPERM from the seccomp filter); the writes fail (EROFS, EACCES or EPERM); the outside file's content and mode unchanged"},
		{"host, without --destructive", "the same, without the remount, mount_setattr and umount2 steps (logged)"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Run: func(t *T) {
		target := t.Out + "/file.txt"
		before := contentAndMode(t, target)
		ops := []helper.Op{opArg("mount-clone-rw", target, "escaped\n")}
		if t.Cfg().InVM || t.Cfg().Destructive {
			ops = append(ops, opArg("mount-table-rw", target, "escaped\n"))
		} else {
			t.Logf("the remount, mount_setattr and umount2 steps run only in the VM guest or with --destructive (where confine failed to deny them they would change this host's mount table)")
		}
		res := t.Helper(t.Flags(), ops...)
		var steps []string
		for _, r := range res {
			steps = append(steps, strings.Split(r.Data, "; ")...)
		}
		t.Logf("in the command: %s", strings.Join(steps, "; "))
		for _, st := range steps {
			if strings.HasPrefix(st, "mount ") && strings.HasSuffix(st, ": ok") {
				t.Errorf("a mount step succeeded in the command: %s", st)
			}
		}
		if after := contentAndMode(t, target); after != before {
			t.Errorf("the outside file changed through the mount table: %s -> %s", before, after)
		}
	},
}, {
	ID:    "boundary/reads-unrestricted",
	Title: "reads, directory listings and execution outside the worktree still work",
	Rationale: "confine restricts writes only. A ruleset that handled READ_FILE, READ_DIR or EXECUTE by mistake " +
		"would break compilers and shells in ways users would blame on the sandbox, and would show the handled " +
		"mask is wrong. The helper itself runs from outside the worktree, which proves EXECUTE.",
	Expect: []Expect{{"ABI ≥ 1", "reads return the outside content; listings are complete"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		res := t.Helper(t.Flags(), op("read", t.Out+"/file.txt"), op("readdir", t.Out), op("read", t.Out+"/link"), op("readdir", "/"))
		t.WantOK("reads", res...)
		if res[0].Data != "outside\n" || res[2].Data != "outside\n" {
			t.Errorf("read %q and %q, want %q", res[0].Data, res[2].Data, "outside\n")
		}
		if res[1].Data != `["dir","emptydir","fifo","file.txt","link"]` {
			t.Errorf("readdir %s = %s", t.Out, res[1].Data)
		}
	},
}, {
	ID:    "boundary/tmp-writable",
	Title: "/tmp is writable by default",
	Rationale: "Compilers and test runners write to /tmp; confine grants it in both modes. A rule that failed " +
		"to land on /tmp, or landed on the wrong inode, shows up here.",
	Expect: []Expect{{"ABI ≥ 1", "create, mkdir, rename, unlink and rmdir under /tmp succeed"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Run: func(t *T) {
		for _, mode := range []string{"workspace-write", "read-only"} {
			d := fmt.Sprintf("/tmp/confine-conformance-%d-%s", os.Getpid(), mode)
			defer os.RemoveAll(d)
			res := t.Helper(t.Flags("--mode", mode), op("mkdir", d), opArg("create", d+"/a", "x"),
				op2("rename", d+"/a", d+"/b"), op("unlink", d+"/b"), op("rmdir", d))
			t.WantOK(mode+": /tmp", res...)
		}
	},
}, {
	ID:    "boundary/read-only-mode",
	Title: "--mode read-only: the worktree is not writable, /tmp and /dev/null are",
	Rationale: "read-only mode is for commands that should only inspect the tree (a linter, git status). Every " +
		"write to the worktree must be denied and the worktree must stay unchanged, while /tmp and /dev/null stay " +
		"writable so that the tools still run. A worktree in /tmp, which stays writable, cannot be held read-only: " +
		"that launch must be refused (bad-root), nothing run; so must one whose .git file names a git directory in /tmp.",
	Expect: []Expect{{"ABI ≥ 1", "worktree writes fail with EACCES (EROFS under the mount layer); /tmp and /dev/null writes succeed; a worktree in /tmp, or its git directory there, is refused (125, bad-root)"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Setup: func(t *T) {
		t.WatchWorktree()
		t.Mkdir(t.Base + "/ro-separate")
		t.Unwatch(t.Base + "/ro-separate")
	},
	Run: func(t *T) {
		tmp := fmt.Sprintf("/tmp/confine-conformance-ro-%d", os.Getpid())
		defer os.Remove(tmp)
		ops := []helper.Op{opArg("create", t.WT+"/new.txt", "x"), opArg("write", t.WT+"/existing.txt", "x"),
			op("unlink", t.WT+"/existing.txt"), op("mkdir", t.WT+"/d"), op("rmdir", t.WT+"/sub2"),
			op2("rename", t.WT+"/existing.txt", t.WT+"/moved.txt"), opArg("create", t.WT+"/sub/new.txt", "x")}
		ops = append(ops, opArg("create", tmp, "x"), opArg("write", "/dev/null", "x"))
		res := t.Helper(t.Flags("--mode", "read-only"), ops...)
		t.WantDenied("read-only worktree", denied, res[:len(res)-2]...)
		t.WantOK("read-only /tmp and /dev/null", res[len(res)-2:]...)
		// A worktree in /tmp is writable through /tmp's rule and mount, its .git too: read-only mode cannot hold
		// it, and must refuse rather than run (an attack review planted core.fsmonitor there).
		inTmp := fmt.Sprintf("/tmp/confine-conformance-rowt-%d", os.Getpid())
		if err := os.MkdirAll(inTmp, 0o755); err != nil {
			t.Fatalf("fixture: %v", err)
		}
		defer os.RemoveAll(inTmp)
		r := t.Confine([]string{"--worktree", inTmp, "--mode", "read-only"}, t.HelperArgv(opArg("create", inTmp+"/ran", "x")), Opts{})
		if checkRefused(t, "--mode read-only, a worktree in /tmp", r, inTmp+"/ran"); r.Report != nil && r.Report.Reason != "bad-root" {
			t.Errorf("--mode read-only, a worktree in /tmp: reason %q, want bad-root", r.Report.Reason)
		}
		// So is a worktree whose .git file names a git directory in /tmp (git init --separate-git-dir): its config
		// and hooks are writable there. The pointer is read as git discovery reads it; no git is needed.
		sep := t.Base + "/ro-separate"
		t.WriteFile(sep+"/.git", "gitdir: "+inTmp+"\n", 0o644)
		r = t.Confine([]string{"--worktree", sep, "--mode", "read-only"}, t.HelperArgv(opArg("create", inTmp+"/ran", "x")), Opts{})
		if checkRefused(t, "--mode read-only, a git directory in /tmp", r, inTmp+"/ran"); r.Report != nil && r.Report.Reason != "bad-root" {
			t.Errorf("--mode read-only, a git directory in /tmp: reason %q, want bad-root", r.Report.Reason)
		}
	},
}, {
	ID:    "boundary/allow-roots",
	Title: "--allow adds a writable directory or a single writable file, and nothing next to them",
	Rationale: "Extra roots must grant exactly what they name. A file root must get a file-scoped rule (a rule on " +
		"its parent would open the whole directory), and a sibling of a root must stay unwritable.",
	Expect: []Expect{{"ABI ≥ 1", "writes in the allowed dir and to the allowed file succeed; the sibling is denied (EACCES); the report has a file rule"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Setup: func(t *T) {
		t.Mkdir(t.Base + "/extra")
		t.WriteFile(t.Base+"/extra-file.txt", "a\n", 0o644)
		t.WriteFile(t.Base+"/sibling.txt", "s\n", 0o644)
		t.Unwatch(t.Base+"/extra", t.Base+"/extra-file.txt")
	},
	Run: func(t *T) {
		b := t.Base
		r := t.Confine(t.Flags("--allow", b+"/extra", "--allow", b+"/extra-file.txt"), t.HelperArgv(
			opArg("create", b+"/extra/new.txt", "x"), opArg("append", b+"/extra-file.txt", "x"),
			opArg("write", b+"/sibling.txt", "x"), opArg("create", b+"/new.txt", "x")), Opts{})
		res := t.helperResults("confine --allow", r, 4)
		t.WantOK("allowed roots", res[:2]...)
		t.WantDenied("next to the allowed roots", denied, res[2:]...)
		if r.Report == nil {
			t.Fatalf("no report")
		}
		if rule := findRule(r.Report, b+"/extra-file.txt"); rule == nil || rule.Type != "file" {
			t.Errorf("report has no file rule for %s: %+v", b+"/extra-file.txt", r.Report.Rules)
		}
	},
}}

// controlWriteOps proves, without confine, that each writeOps op works in a copy of the standard trees.
func controlWriteOps(t *T) {
	ctl := t.ControlEach(func(out, wt string) []helper.Op { a, b := writeOps(out, wt); return append(a, b...) })
	for i, ok := range ctl {
		if !ok {
			t.Fatalf("control op %d failed without confine: the case cannot tell confine's denial apart", i)
		}
	}
}

// contentAndMode is path's content and mode (modeOf), as "content %q, mode 0NNN"; it fails the case where path
// cannot be read.
func contentAndMode(t *T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return fmt.Sprintf("content %q, mode %#o", b, modeOf(path))
}

// metaRoute is one metadata route of the boundary/metadata-* cases: a helper op, what it changes, and the value it
// sets.
type metaRoute struct {
	op   string
	kind string // mode, owner, times, xattr-set, xattr-remove
}

// metaRoutes are every metadata route: the helper's first five ops (chmod, chown, utimes, setxattr, removexattr
// by path, through libc's *at forms) and the m-* routes (internal/helper/meta.go): legacy calls, *at with a
// directory descriptor, and descriptors the command opened read-only.
func metaRoutes() []metaRoute {
	routes := []metaRoute{{"chmod", "mode"}, {"chown", "owner"}, {"utimes", "times"}, {"setxattr", "xattr-set"}, {"removexattr", "xattr-remove"}}
	for _, name := range helper.MetaOps() {
		kind := "mode"
		switch {
		case strings.Contains(name, "chown"):
			kind = "owner"
		case strings.Contains(name, "utime"):
			kind = "times"
		case strings.Contains(name, "removexattr"):
			kind = "xattr-remove"
		case strings.Contains(name, "setxattr"):
			kind = "xattr-set"
		}
		routes = append(routes, metaRoute{name, kind})
	}
	return routes
}

// metaOwner is the chown routes' target: uid:gid 1:1 as root (a visible change), the caller's own ids otherwise.
func metaOwner() (int, int) {
	if os.Getuid() == 0 {
		return 1, 1
	}
	return os.Getuid(), os.Getgid()
}

// metaOp is route r aimed at path. The outside symlink routes that do not follow (lchown, fchownat with
// AT_SYMLINK_NOFOLLOW, utimensat with it) are aimed at the outside link by metadataOutsideOps.
func metaOp(r metaRoute, path string) helper.Op {
	o := op(r.op, path)
	if r.kind == "owner" && r.op != "chown" {
		o.Arg = helper.UIDGID(metaOwner())
	}
	if r.op == "setxattr" {
		o.Arg = "changed"
	}
	return o
}

// metadataOutsideOps are every route aimed at the outside file out/file.txt, and the no-follow routes at the
// outside symlink out/link too.
func metadataOutsideOps(out string) []helper.Op {
	var ops []helper.Op
	for _, r := range metaRoutes() {
		ops = append(ops, metaOp(r, out+"/file.txt"))
	}
	for _, r := range metaRoutes() {
		if r.op == "m-lchown" || r.op == "m-fchownat" || r.op == "m-utimensat-nofollow" {
			ops = append(ops, metaOp(r, out+"/link"))
		}
	}
	return ops
}

// metaInsidePath is the worktree file route r is aimed at: one per route, so that each effect can be checked.
func metaInsidePath(wt string, r metaRoute) string { return wt + "/meta/" + r.op + ".txt" }

// metadataSetup makes the inside files: mode 0644, user.conformance "original" where the file system has user
// xattrs.
func metadataSetup(t *T) {
	for _, r := range metaRoutes() {
		p := metaInsidePath(t.WT, r)
		t.WriteFile(p, "meta\n", 0o644)
		_ = unix.Setxattr(p, "user.conformance", []byte("original"), 0)
	}
}

// metaControl runs each route without confine, each in a fresh copy of the standard trees (in the worktree, which
// the invariant does not watch, and removed after), and
// returns the errno of each route that fails there ("" when it works): the errno a confined run may answer too.
// A route may be missing here (a legacy call on arm64: ENOSYS; fchmodat2 before 6.6; no user xattrs:
// EOPNOTSUPP); any other control failure stops the case, since a denial under confine could not be told apart
// from the file system's.
func metaControl(t *T) map[string]string {
	out := map[string]string{}
	dir := t.WT + "/control-meta"
	defer os.RemoveAll(dir)
	for i, o := range metadataOutsideOps(dir + "/0/outside") {
		d := fmt.Sprintf("%s/%d", dir, i)
		makeTree(t, d+"/outside", d+"/wt")
		o.Path = strings.Replace(o.Path, dir+"/0/", d+"/", 1)
		res := t.Control(o)[0]
		if !res.OK && out[o.Op] == "" {
			out[o.Op] = res.Errno
			if !metaUnavailable(o.Op) {
				t.Fatalf("control: %s %s fails without confine with %s", o.Op, o.Path, res.Errno)
			}
			t.Logf("control: %s fails without confine with %s %s: a route this kernel, architecture or file system lacks", o.Op, res.Errno, res.Data)
		}
	}
	return out
}

// metaUnavailable reports whether a route may be missing here: a legacy call (arm64), fchmodat2 (6.6), an xattr
// call (file systems without user xattrs).
func metaUnavailable(op string) bool {
	switch op {
	case "m-chmod", "m-chown", "m-lchown", "m-utime", "m-utimes", "m-futimesat", "m-fchmodat2-empty":
		return true
	}
	return strings.Contains(op, "xattr")
}

// runMetadata runs every route outside and inside (fallback: where no namespace can be had) and judges the
// results by report.metadata.
func runMetadata(t *T, fallback bool) {
	ctl := metaControl(t)
	outOps := metadataOutsideOps(t.Out)
	var inOps []helper.Op
	for _, r := range metaRoutes() {
		inOps = append(inOps, metaOp(r, metaInsidePath(t.WT, r)))
	}
	r, res := t.HelperRun(t.Flags(), Opts{NoNamespaces: fallback}, append(outOps, inOps...)...)
	if r.Report == nil {
		t.Fatalf("no report on --report-fd")
	}
	m := r.Report.Metadata
	t.Logf("report.metadata = %q", m)
	if fallback {
		t.WantFallback(r)
	}
	checkMetadata(t, r, ctl, res[:len(outOps)], res[len(outOps):])
}

// checkMetadata judges the routes' results outside (every route fails: EROFS, EPERM or EACCES under the mount
// layer, EPERM under supervisor and seccomp-deny) and inside (by
// report.metadata: each succeeds with its effect under mount-layer and supervisor, fails with EPERM under
// seccomp-deny). A route whose control failed (ctl: the errno without confine) may answer that errno instead.
func checkMetadata(t *T, r Run, ctl map[string]string, outside, inside []helper.Result) {
	m := r.Report.Metadata
	absent := func(x helper.Result) bool { return !x.OK && ctl[x.Op] != "" && x.Errno == ctl[x.Op] }
	wantOut := []string{"EPERM"} // the supervisor's answer, and seccomp-deny's (the contract of issue 15)
	if m == "mount-layer" {
		wantOut = []string{"EROFS", "EPERM", "EACCES"}
	}
	for _, x := range outside {
		if x.OK || !(contains(wantOut, x.Errno) || absent(x)) {
			t.Errorf("%s: outside: %s %s: ok=%v errno %s, want %s", m, x.Op, x.Path, x.OK, x.Errno, strings.Join(wantOut, " or "))
		}
	}
	t.Logf("%s: outside %s; inside %s", m, errnoTally(outside), errnoTally(inside))
	routes := metaRoutes()
	switch m {
	case "mount-layer", "supervisor":
		for i, x := range inside {
			switch {
			case absent(x):
				t.Logf("%s: inside: %s answers %s, as without confine", m, x.Op, x.Errno)
			case !x.OK:
				t.Errorf("%s: inside the worktree %s failed with %s, want success", m, x.Op, x.Errno)
			default:
				if msg := metaEffect(routes[i], x.Path); msg != "" {
					t.Errorf("%s: inside: %s reported success but %s", m, x.Op, msg)
				}
			}
		}
	case "seccomp-deny":
		for _, x := range inside {
			if x.OK || !(x.Errno == "EPERM" || absent(x)) {
				t.Errorf("seccomp-deny: inside: %s %s: ok=%v errno %s, want EPERM (denied everywhere)", x.Op, x.Path, x.OK, x.Errno)
			}
		}
	default:
		t.Errorf("report.metadata %q, want mount-layer, supervisor or seccomp-deny", m)
	}
	if m == "supervisor" || m == "seccomp-deny" {
		checkSeccompNames(t, r)
	}
}

// errnoTally counts results by outcome ("ok" or the errno), for the log.
func errnoTally(res []helper.Result) string {
	n := map[string]int{}
	for _, x := range res {
		k := x.Errno
		if x.OK {
			k = "ok"
		}
		n[k]++
	}
	var parts []string
	for k, c := range n {
		parts = append(parts, fmt.Sprintf("%s×%d", k, c))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d routes: %s", len(res), strings.Join(parts, " "))
}

// checkSeccompNames requires report.seccomp to name the chmod, chown and setxattr families (supervisedNames):
// plain names or "supervised:NAME" both match.
func checkSeccompNames(t *T, r Run) {
	for _, name := range supervisedNames {
		if !containsSubstring(r.Report.Seccomp, name) {
			t.Errorf("report.seccomp %v names no %s system call", r.Report.Seccomp, name)
		}
	}
}

// metaEffect returns "" when route r's change is visible on path, else what is wrong.
func metaEffect(r metaRoute, path string) string {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return err.Error()
	}
	switch r.kind {
	case "mode":
		want := uint32(helper.MetaMode)
		if r.op == "chmod" {
			want = 0o600
		}
		if st.Mode&0o7777 != want {
			return fmt.Sprintf("the mode is %04o, want %04o", st.Mode&0o7777, want)
		}
	case "owner":
		uid, gid := metaOwner()
		if r.op == "chown" {
			uid, gid = os.Getuid(), os.Getgid()
		}
		if int(st.Uid) != uid || int(st.Gid) != gid {
			return fmt.Sprintf("the owner is %d:%d, want %d:%d", st.Uid, st.Gid, uid, gid)
		}
	case "times":
		want := int64(helper.MetaTime)
		if r.op == "utimes" {
			want = 0
		}
		if st.Mtim.Sec != want || st.Atim.Sec != want {
			return fmt.Sprintf("atime %d mtime %d, want %d", st.Atim.Sec, st.Mtim.Sec, want)
		}
	case "xattr-set":
		if v := getxattr(path, "user.conformance"); v != "changed" {
			return fmt.Sprintf("user.conformance is %q, want \"changed\"", v)
		}
	case "xattr-remove":
		if v := getxattr(path, "user.conformance"); !strings.HasPrefix(v, "<") {
			return fmt.Sprintf("user.conformance is still %q", v)
		}
	}
	return ""
}

func wantContent(t *T, path, want string) {
	b, err := os.ReadFile(path)
	if err != nil || string(b) != want {
		t.Errorf("%s: content %q (err %v), want %q", path, b, err, want)
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, s := range list {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func findRule(r *Report, path string) *Rule {
	for i := range r.Rules {
		if r.Rules[i].Path == path {
			return &r.Rules[i]
		}
	}
	return nil
}
