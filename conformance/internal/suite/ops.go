package suite

import "github.com/confine-dev/confine/conformance/internal/helper"

// op builds a helper op on one path; op2 on two (rename/link source and destination, symlink link and target).
func op(name, path string) helper.Op         { return helper.Op{Op: name, Path: path} }
func op2(name, path, path2 string) helper.Op { return helper.Op{Op: name, Path: path, Path2: path2} }
func opArg(name, path, arg string) helper.Op { return helper.Op{Op: name, Path: path, Arg: arg} }

// Errno sets a case accepts for a denial.
var (
	// A write outside the writable set fails with EACCES (Landlock) or, where confine's mount layer made every
	// other mount read-only (report.metadata "mount-layer"), with EROFS. Both are the kernel's verdict.
	denied  = []string{"EACCES", "EROFS"}
	deniedX = []string{"EACCES", "EROFS", "EXDEV"} // a rename or link across directories may fail on REFER first
	eperm   = []string{"EPERM"}                    // confine's seccomp filter (report.metadata "seccomp-deny")
	// Landlock's own verdict: where no read-only mount can answer first (no mount layer; a FIFO or device node).
	eacces      = []string{"EACCES"}
	eaccesExdev = []string{"EACCES", "EXDEV"}
	// bwrap's verdict: its read-only binds, with no Landlock domain (report.backend bwrap).
	erofs      = []string{"EROFS"}
	erofsExdev = []string{"EROFS", "EXDEV"}
)

// errnoOf is a result's errno, or "ok".
func errnoOf(r helper.Result) string {
	if r.OK {
		return "ok"
	}
	return r.Errno
}

// writeOps are the write-class operations against a directory dir that holds file.txt, link (to file.txt),
// dir/inner.txt, emptydir/ and fifo, plus moves between dir and wt (a directory holding existing.txt). Every one must be
// denied when dir is outside the writable set and wt inside it.
func writeOps(dir, wt string) (sameDir, crossDir []helper.Op) {
	sameDir = []helper.Op{
		opArg("create", dir+"/new.txt", "x"),
		opArg("create", dir+"/dir/new.txt", "x"),
		opArg("write", dir+"/file.txt", "x"),
		opArg("append", dir+"/file.txt", "x"),
		op("trunc-open", dir+"/file.txt"),
		op("mkdir", dir+"/newdir"),
		op("rmdir", dir+"/emptydir"),
		op("unlink", dir+"/dir/inner.txt"),
		op("unlink", dir+"/link"),
		op2("symlink", dir+"/sym", "file.txt"),
		op("mkfifo", dir+"/newfifo"),
		opArg("fifo-write", dir+"/fifo", "x"),
	}
	crossDir = []helper.Op{
		op2("rename", dir+"/file.txt", dir+"/renamed.txt"),
		op2("rename", dir+"/dir", dir+"/dir2"),
		op2("link", dir+"/file.txt", dir+"/hard.txt"),
		op2("rename", dir+"/file.txt", wt+"/stolen.txt"),
		op2("rename", wt+"/existing.txt", dir+"/planted.txt"),
		op2("link", wt+"/existing.txt", dir+"/planted-link.txt"),
		op2("link", dir+"/file.txt", wt+"/hard-out.txt"),
	}
	return sameDir, crossDir
}
