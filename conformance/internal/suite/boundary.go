package suite

import (
	"fmt"
	"os"
	"strings"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

var landlockOnly = Expect{"no Landlock", "SKIP: confine refuses every command there (fail-closed family)"}

var boundaryCases = []Case{{
	ID:    "boundary/write-inside",
	Title: "every kind of write inside the worktree succeeds",
	Rationale: "A sandbox that denies too much gets turned off. Creating, writing, appending, truncating on open, " +
		"making and removing directories, renaming and hard-linking within one directory, symlinks and FIFOs " +
		"inside the worktree must all work on every ABI, and their effects must be visible afterwards.",
	Expect: []Expect{{"ABI ≥ 1", "every op succeeds; the files hold what was written"}, landlockOnly},
	Needs:  Needs{Landlock: true},
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
		"tree, proves the denial is confine's, not the file system's.",
	Expect: []Expect{{"ABI ≥ 1", "every op fails with EACCES or EROFS (EXDEV allowed for cross-directory rename/link); the FIFO write with EACCES; nothing outside changes"}, landlockOnly},
	Needs:  Needs{Landlock: true},
	Setup:  controlWriteOps,
	Run: func(t *T) {
		same, cross := writeOps(t.Out, t.WT)
		res := t.Helper(t.Flags(), append(same, cross...)...)
		t.WantDenied("outside the worktree", denied, res[:len(same)]...)
		t.WantDenied("across the boundary", deniedX, res[len(same):]...)
		for _, x := range res {
			if x.Op == "fifo-write" {
				t.WantDenied("a FIFO outside (a read-only mount does not stop it; Landlock must)", eacces, x)
			}
		}
	},
}, {
	ID:    "boundary/write-outside-landlock-only",
	Title: "where confine cannot build its mount layer, Landlock alone denies every write outside with EACCES",
	Rationale: "The mount layer answers EROFS before Landlock is asked, so the other boundary cases cannot tell " +
		"whether Landlock holds the boundary on its own. Here confine runs where no user or mount namespace can " +
		"be made (a seccomp filter answers EPERM to unshare and clone with CLONE_NEWUSER or CLONE_NEWNS, as a " +
		"container's profile does). confine must fall back, say so (report.metadata seccomp-deny, a warning), " +
		"and the same outside writes must each fail with Landlock's EACCES (EXDEV for a cross-directory rename " +
		"or link refused on REFER), with nothing outside changed.",
	Expect: []Expect{{"ABI ≥ 1", "report.metadata seccomp-deny with a warning; every op fails with EACCES (EXDEV allowed for cross-directory rename/link)"}, landlockOnly},
	Needs:  Needs{Landlock: true},
	Setup:  controlWriteOps,
	Run: func(t *T) {
		same, cross := writeOps(t.Out, t.WT)
		r, res := t.HelperRun(t.Flags(), Opts{NoNamespaces: true}, append(same, cross...)...)
		t.WantMetadata(r, "seccomp-deny")
		if len(r.Report.Warnings) == 0 {
			t.Errorf("the fallback to seccomp-deny is not warned about: %s", r.ReportRaw)
		}
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
	Expect: []Expect{{"ABI ≥ 1", "inside: the script's writes land; outside: each fails ('Permission denied', or 'Read-only file system' under the mount layer), nothing changes"}, landlockOnly},
	Needs:  Needs{Landlock: true, Shell: true},
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
	Title: "chmod, chown, utimes and xattr changes outside the writable set are denied; inside they follow report.metadata",
	Rationale: "Landlock has no right for metadata, so on its own it would let a confined command chmod, chown, " +
		"touch or set xattrs on any file it can reach, outside included (a chmod +x on a hook, a timestamp that " +
		"fools make). confine closes this one of two ways, and the report says which (report.metadata): " +
		"read-only mounts for everything outside the writable roots (mount-layer), where these calls fail with " +
		"EROFS outside and work inside, or, where no mount namespace can be made, a seccomp filter that denies " +
		"them everywhere with EPERM (seccomp-deny). The control shows each op works without confine; the " +
		"invariant snapshot shows that nothing outside changed (mode, owner, times, xattrs).",
	Expect: []Expect{{"ABI ≥ 1, mount-layer (root, or user namespaces allowed)", "outside: EROFS (EPERM/EACCES accepted); inside: each op succeeds"},
		{"ABI ≥ 1, seccomp-deny", "EPERM for each op, inside and outside; report.seccomp names the chmod, chown and setxattr calls"}, landlockOnly},
	Needs: Needs{Landlock: true},
	Setup: controlMetadataOps,
	Run: func(t *T) {
		r, res := t.HelperRun(t.Flags(), Opts{}, append(metadataOps(t.Out+"/file.txt"), metadataOps(t.WT+"/existing.txt")...)...)
		if r.Report == nil {
			t.Fatalf("no report on --report-fd")
		}
		t.Logf("report.metadata = %q", r.Report.Metadata)
		checkMetadata(t, r, res)
	},
}, {
	ID:    "boundary/metadata-fallback",
	Title: "where no mount namespace can be made, metadata changes are denied everywhere with EPERM, never allowed",
	Rationale: "The mount layer needs a mount namespace (root, or unprivileged user namespaces). In a container " +
		"whose seccomp profile forbids namespaces, or on a host with user namespaces turned off, confine must " +
		"fall back to something stricter, never weaker: its seccomp filter denies chmod, chown, utimes and the " +
		"xattr calls everywhere with EPERM, inside the worktree too, and the report says seccomp-deny and warns " +
		"why. The case takes namespaces away with a seccomp filter of its own (EPERM to unshare and clone with " +
		"CLONE_NEWUSER or CLONE_NEWNS), so the fallback is checked on every kernel.",
	Expect: []Expect{{"ABI ≥ 1", "report.metadata seccomp-deny with a warning; EPERM for each op inside and outside; report.seccomp names the chmod, chown and setxattr calls"}, landlockOnly},
	Needs:  Needs{Landlock: true},
	Setup:  controlMetadataOps,
	Run: func(t *T) {
		r, res := t.HelperRun(t.Flags(), Opts{NoNamespaces: true}, append(metadataOps(t.Out+"/file.txt"), metadataOps(t.WT+"/existing.txt")...)...)
		t.WantMetadata(r, "seccomp-deny")
		if len(r.Report.Warnings) == 0 {
			t.Errorf("the fallback to seccomp-deny is not warned about: %s", r.ReportRaw)
		}
		checkMetadata(t, r, res)
	},
}, {
	ID:    "boundary/reads-unrestricted",
	Title: "reads, directory listings and execution outside the worktree still work",
	Rationale: "confine restricts writes only. A ruleset that handled READ_FILE, READ_DIR or EXECUTE by mistake " +
		"would break compilers and shells in ways users would blame on the sandbox, and would show the handled " +
		"mask is wrong. The helper itself runs from outside the worktree, which proves EXECUTE.",
	Expect: []Expect{{"ABI ≥ 1", "reads return the outside content; listings are complete"}, landlockOnly},
	Needs:  Needs{Landlock: true},
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
	Expect: []Expect{{"ABI ≥ 1", "create, mkdir, rename, unlink and rmdir under /tmp succeed"}, landlockOnly},
	Needs:  Needs{Landlock: true},
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
		"writable so that the tools still run.",
	Expect: []Expect{{"ABI ≥ 1", "worktree writes fail with EACCES (EROFS under the mount layer); /tmp and /dev/null writes succeed"}, landlockOnly},
	Needs:  Needs{Landlock: true},
	Setup:  func(t *T) { t.WatchWorktree() },
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
	},
}, {
	ID:    "boundary/allow-roots",
	Title: "--allow adds a writable directory or a single writable file, and nothing next to them",
	Rationale: "Extra roots must grant exactly what they name. A file root must get a file-scoped rule (a rule on " +
		"its parent would open the whole directory), and a sibling of a root must stay unwritable.",
	Expect: []Expect{{"ABI ≥ 1", "writes in the allowed dir and to the allowed file succeed; the sibling is denied (EACCES); the report has a file rule"}, landlockOnly},
	Needs:  Needs{Landlock: true},
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

// controlMetadataOps proves, without confine, that each metadataOps op works (xattrs may be unsupported).
func controlMetadataOps(t *T) {
	for i, ok := range t.ControlEach(func(out, wt string) []helper.Op { return metadataOps(out + "/file.txt") }) {
		if op := metadataOps("")[i].Op; !ok && op != "setxattr" && op != "removexattr" {
			t.Fatalf("control: %s fails without confine", op)
		}
	}
}

// checkMetadata checks the results of metadataOps outside (res[:5]) and inside the worktree (res[5:]) against
// the way the report says metadata is closed.
func checkMetadata(t *T, r Run, res []helper.Result) {
	noXattr := func(x helper.Result) bool { return x.Errno == "EOPNOTSUPP" || x.Errno == "ENOTSUP" }
	for _, x := range res[:5] { // outside
		if x.OK || !(contains([]string{"EPERM", "EROFS", "EACCES"}, x.Errno) || (x.Op != "chmod" && noXattr(x))) {
			t.Errorf("outside: %s %s: ok=%v errno %s, want EROFS, EPERM or EACCES", x.Op, x.Path, x.OK, x.Errno)
		}
	}
	switch r.Report.Metadata {
	case "mount-layer":
		for _, x := range res[5:] {
			if !x.OK && !(noXattr(x) && (x.Op == "setxattr" || x.Op == "removexattr")) {
				t.Errorf("mount-layer: inside the worktree %s failed with %s, want success", x.Op, x.Errno)
			}
		}
	case "seccomp-deny":
		for _, x := range res {
			if x.OK || (x.Errno != "EPERM" && !(noXattr(x) && x.Op != "chmod" && x.Op != "chown" && x.Op != "utimes")) {
				t.Errorf("seccomp-deny: %s %s: ok=%v errno %s, want EPERM", x.Op, x.Path, x.OK, x.Errno)
			}
		}
		// By family: arm64 has no chmod(2) or chown(2), only fchmodat(2) and fchownat(2).
		for _, name := range []string{"chmod", "chown", "setxattr"} {
			if !containsSubstring(r.Report.Seccomp, name) {
				t.Errorf("report.seccomp %v names no %s system call", r.Report.Seccomp, name)
			}
		}
	default:
		t.Errorf("report.metadata %q, want mount-layer or seccomp-deny", r.Report.Metadata)
	}
}

func metadataOps(path string) []helper.Op {
	return []helper.Op{op("chmod", path), op("chown", path), op("utimes", path),
		opArg("setxattr", path, "changed"), op("removexattr", path)}
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
