package suite

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
	"github.com/confine-dev/confine/conformance/internal/kabi"
)

var devNullCases = []Case{{
	ID:    "dev-null/redirects",
	Title: "> /dev/null, >> /dev/null and O_TRUNC on /dev/null work",
	Rationale: "Half of all shell commands redirect to /dev/null; if that fails the sandbox is unusable. Opening it " +
		"with O_TRUNC needs TRUNCATE on ABI ≥ 3, and a rule carrying directory rights on the device fails with " +
		"EINVAL, so a launcher that gets the file rule wrong breaks here on some ABIs only.",
	Expect: []Expect{{"ABI ≥ 1", "the shell redirections and the helper's write, append and O_TRUNC opens succeed"}, noLandlockRow},
	Needs:  Needs{Confined: true, Shell: true},
	Run: func(t *T) {
		r := t.Confine(t.Flags(), []string{"/bin/sh", "-c", `echo a > /dev/null && echo b >> /dev/null && : > /dev/null && echo ok`}, Opts{})
		if r.Exit != 0 || strings.TrimSpace(r.Stdout) != "ok" {
			t.Errorf("sh redirections to /dev/null: exit %d, stdout %q, stderr %q", r.Exit, r.Stdout, r.Stderr)
		}
		res := t.Helper(t.Flags(), opArg("write", "/dev/null", "x"), opArg("append", "/dev/null", "x"), op("trunc-open", "/dev/null"))
		t.WantOK("/dev/null", res...)
	},
}, {
	ID:    "dev-null/file-rule",
	Title: "the /dev/null rule is file-scoped: file rights only, no rule on /dev",
	Rationale: "A rule on a non-directory may carry only file rights; directory rights on /dev/null make " +
		"landlock_add_rule fail with EINVAL, and the tempting fix, a rule on /dev, makes every device node and " +
		"/dev/shm writable. The report must show one rule of type file on /dev/null whose rights are all file " +
		"rights and include WRITE_FILE, and no rule on /dev or /. Under bwrap the /dev/null rule stands for bwrap's " +
		"own device node in its synthetic /dev: type file, no Landlock rights, and still no rule on /dev or /.",
	Expect: []Expect{{"ABI ≥ 1", "rule {path: /dev/null, type: file, rights ⊆ {WRITE_FILE, TRUNCATE, IOCTL_DEV}}; none on /dev"},
		{"bwrap (no Landlock, or --backend bwrap)", "rule {path: /dev/null, type: file, rights []}; none on /dev or /"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Run: func(t *T) {
		r := t.Confine(t.Flags(), t.HelperArgv(), Opts{})
		if r.Exit != 0 || r.Report == nil {
			t.Fatalf("exit %d, report %q, stderr %q", r.Exit, r.ReportRaw, r.Stderr)
		}
		rule := findRule(r.Report, "/dev/null")
		if rule == nil {
			t.Fatalf("no rule on /dev/null in %+v", r.Report.Rules)
		}
		if rule.Type != "file" {
			t.Errorf("/dev/null rule type %q, want file", rule.Type)
		}
		t.WantBackend(r)
		if t.Bwrap() && (rule.Rights == nil || len(rule.Rights) != 0) {
			t.Errorf("bwrap: /dev/null rule has rights %v, want [] (no Landlock domain)", rule.Rights)
		}
		if !t.Bwrap() && !contains(rule.Rights, "WRITE_FILE") {
			t.Errorf("/dev/null rule lacks WRITE_FILE: %v", rule.Rights)
		}
		for _, right := range rule.Rights {
			if !kabi.IsFileRight(right) {
				t.Errorf("/dev/null rule carries the directory right %s", right)
			}
		}
		for _, p := range []string{"/dev", "/dev/", "/"} {
			if findRule(r.Report, p) != nil {
				t.Errorf("report has a rule on %s", p)
			}
		}
	},
}, {
	ID:    "dev-null/other-dev-denied",
	Title: "other device nodes and new files in /dev stay unwritable; the host's /dev/shm only without a mount layer",
	Rationale: "Allowing /dev/null must not allow /dev. Writing to /dev/zero or /dev/full and creating a file or " +
		"FIFO in /dev must be denied, and nothing may appear in the host's /dev/shm (shared memory, world-writable, " +
		"outside the worktree) where the mount layer gives a private one. A read-only mount (confine's mount layer) does not stop a write into a device " +
		"node, so the writes must fail with Landlock's EACCES; creating in /dev may fail with EROFS first. The " +
		"mount layer gives the command a private tmpfs on /dev/shm, where creating succeeds and the host's stays " +
		"unchanged; without the layer the host's /dev/shm is granted (issue 28: POSIX shared memory must work in " +
		"every mode; the report's channel shm is open), so creating there succeeds and the report must say so. Creating in /dev is also denied by permissions " +
		"for a non-root user, so that op is decisive only as root (the VM runs as root). Under bwrap the command's " +
		"/dev is bwrap's synthetic one, never the host's: it must hold only bwrap's standard nodes (null, zero, " +
		"full, random, urandom, tty, the pts and shm directories, ptmx and the fd links), so no other device is " +
		"reachable; writing into /dev/zero or /dev/full then does what those devices do, and a file created in " +
		"/dev lands in bwrap's private tmpfs: the watch on the host's /dev and /dev/shm decides.",
	Expect: []Expect{{"ABI ≥ 1", "writes to /dev/zero and /dev/full fail with EACCES; creating in /dev fails with EACCES or EROFS; nothing appears in /dev; with the mount layer nothing appears in the host's /dev/shm, without it creating there succeeds and the channel shm is open"},
		{"bwrap (no Landlock, or --backend bwrap)", "the command's /dev holds only bwrap's standard nodes; /dev/zero and /dev/full behave as those devices; nothing appears in the host's /dev or /dev/shm"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: func(t *T) {
		name := fmt.Sprintf("confine-conformance-%d", os.Getpid())
		t.Watch("/dev/"+name, "/dev/"+name+"-fifo", "/dev/shm/"+name)
		if os.Getuid() != 0 {
			t.Logf("not root: creating in /dev is denied by permissions too, so only the root run (the VM) is decisive for it")
		}
	},
	Run: func(t *T) {
		name := fmt.Sprintf("confine-conformance-%d", os.Getpid())
		ops := []helper.Op{opArg("write", "/dev/zero", "x"), opArg("write", "/dev/full", "x"), opArg("create", "/dev/"+name, "x"),
			op("mkfifo", "/dev/"+name+"-fifo")}
		if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
			ops = append(ops, opArg("create", "/dev/shm/"+name, "x"))
			if c := t.Control(ops[len(ops)-1]); !c[0].OK {
				t.Errorf("control: creating in /dev/shm fails without confine: %s", c[0].Errno)
			}
			os.Remove("/dev/shm/" + name)
		} else {
			t.Logf("/dev/shm absent: not tested")
		}
		r, res := t.HelperRun(t.Flags(), Opts{}, append([]helper.Op{op("readdir", "/dev")}, ops...)...)
		t.WantBackend(r)
		list, res := res[0], res[1:]
		if t.Bwrap() {
			if !list.OK {
				t.Fatalf("bwrap: listing the command's /dev: %s", list.Errno)
			}
			var names []string
			if err := json.Unmarshal([]byte(list.Data), &names); err != nil {
				t.Fatalf("bwrap: /dev listing %s: %v", list.Data, err)
			}
			for _, n := range names {
				if !bwrapDev[n] && n != name && n != name+"-fifo" {
					t.Errorf("bwrap: the command's /dev holds %q, which is not one of bwrap's standard nodes (the host's /dev reached in?)", n)
				}
			}
			if !contains(names, "null") || contains(names, "sda") || contains(names, "kmsg") {
				t.Errorf("bwrap: the command's /dev is not bwrap's synthetic one: %v", names)
			}
			t.Logf("bwrap: the command's /dev: %v; /dev/zero write %s, /dev/full write %s, create in /dev %s", names, errnoOf(res[0]), errnoOf(res[1]), errnoOf(res[2]))
			if !res[1].OK && res[1].Errno != "ENOSPC" && res[1].Errno != "EACCES" {
				t.Errorf("bwrap: /dev/full write failed with %s, want ENOSPC (the device) or a denial", res[1].Errno)
			}
			return
		}
		// A read-only mount does not stop writes into a device node: only Landlock does, so EACCES.
		t.WantDenied("writing into /dev/zero and /dev/full", eacces, res[:2]...)
		t.WantDenied("creating in /dev", denied, res[2:4]...)
		// In /dev/shm: made in the layer's private tmpfs, where the watch on the host's /dev/shm decides; without
		// the layer, made in the host's, which is granted and reported open (and removed here, for the watch).
		if len(res) > 4 && r.Report != nil && !r.Report.MountLayer() {
			name := "/dev/shm/" + fmt.Sprintf("confine-conformance-%d", os.Getpid())
			os.Remove(name)
			if !res[4].OK {
				t.Errorf("%s: creating in the host's /dev/shm failed (%s): it is granted without a mount layer", r.Report.Metadata, res[4].Errno)
			}
			if c := r.Report.Channels["shm"]; c.Status != "open" {
				t.Errorf("%s: the host's /dev/shm is writable, but the channel shm is %q", r.Report.Metadata, c.Status)
			}
		}
	},
}, {
	ID:    "dev-null/not-replaceable",
	Title: "/dev/null cannot be removed, renamed or replaced, even by root",
	Rationale: "A command that can replace /dev/null with a regular file captures everything every other process " +
		"discards. The rule on /dev/null grants writing to the device, never changing the /dev entry: unlink, " +
		"rename away and rename over it must fail, for root too. Because a failure would break the machine, the " +
		"case runs only in the VM guest (or with --destructive), and restores /dev/null if it was broken. Under " +
		"bwrap the command's /dev/null is bwrap's, in a private /dev: whatever the command does to that name, the " +
		"host's /dev/null must stay the null device and no name appear next to it.",
	Expect: []Expect{{"ABI ≥ 1, in the VM (root)", "unlink, rename away and rename over /dev/null fail with EACCES/EXDEV; it stays char 1:3"},
		{"bwrap, in the VM (root)", "the host's /dev/null stays char 1:3, no /dev/null-moved or /dev/null-link appears on the host"},
		{"host, without --destructive", "SKIP: would risk the host's /dev/null"}, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: func(t *T) { t.Watch("/dev/null-moved", "/dev/null-link") },
	Run: func(t *T) {
		if !t.Cfg().InVM && !t.Cfg().Destructive {
			t.Skipf("replacing /dev/null is attempted only in the VM guest or with --destructive (a failure would break this host)")
		}
		defer restoreDevNull(t)
		r, res := t.HelperRun(t.Flags(), Opts{}, op("unlink", "/dev/null"), op2("rename", "/dev/null", "/dev/null-moved"),
			op2("rename", t.WT+"/existing.txt", "/dev/null"), op2("link", t.WT+"/existing.txt", "/dev/null-link"))
		t.WantBackend(r)
		if t.Bwrap() { // the command's /dev is private: the host's /dev/null (restoreDevNull, the watch) decides
			t.Logf("bwrap, in the command's private /dev: unlink %s, rename away %s, rename over %s, link %s",
				errnoOf(res[0]), errnoOf(res[1]), errnoOf(res[2]), errnoOf(res[3]))
			if devNullOK() != "" {
				t.Errorf("bwrap: the host's /dev/null %s", devNullOK())
			}
			return
		}
		t.WantDenied("/dev/null", deniedX, res...)
	},
}}

// bwrapDev are the names bwrap's --dev puts in its synthetic /dev (bubblewrap.c, SETUP_MAKE_DEV), console when
// stdin is a terminal.
var bwrapDev = map[string]bool{"null": true, "zero": true, "full": true, "random": true, "urandom": true, "tty": true,
	"pts": true, "ptmx": true, "shm": true, "fd": true, "stdin": true, "stdout": true, "stderr": true, "core": true,
	"console": true, "mqueue": true}

func restoreDevNull(t *T) {
	if devNullOK() == "" {
		return
	}
	t.Errorf("/dev/null %s: restoring it", devNullOK())
	os.Remove("/dev/null-moved")
	os.Remove("/dev/null-link")
	os.Remove("/dev/null")
	if err := unix.Mknod("/dev/null", unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Errorf("restoring /dev/null: %v", err)
	}
	unix.Chmod("/dev/null", 0o666)
}
