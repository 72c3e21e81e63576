// Package helper is the confined side of a conformance case: the runner re-executes its own binary as the
// command under confine, and the helper performs a list of single syscalls and prints, for each, whether it
// succeeded and with which errno. This keeps cases independent of the guest's userland (the VM guest has only
// busybox), and makes the expected errno exact.
//
// Protocol: argv is `confine-conformance helper JSON`, where JSON is a list of [Op]. The helper prints one JSON
// line, a list of [Result] in the same order, and exits 0, unless an op ends the process (exit, kill-self).
package helper

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Op is one syscall to perform. Path is the primary path; Path2 the second one (rename and link destination,
// symlink target); Arg is op-specific (exit status, signal number, data to write).
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path,omitempty"`
	Path2 string `json:"path2,omitempty"`
	Arg   string `json:"arg,omitempty"`
}

// Result is the outcome of one Op: OK, or the errno's name (e.g. "EACCES", from x/sys/unix.ErrnoName) in Errno.
// Data carries what a read-class op returned (file content, directory names, fd list, pid).
type Result struct {
	Op    string `json:"op"`
	Path  string `json:"path,omitempty"`
	OK    bool   `json:"ok"`
	Errno string `json:"errno,omitempty"`
	Data  string `json:"data,omitempty"`
}

// Ops lists every op name the helper knows, with what it does. It is also the documentation in CASES.md.
var Ops = map[string]string{
	"create":      "open(path, O_WRONLY|O_CREAT|O_EXCL, 0644) and write arg",
	"write":       "open(path, O_WRONLY) an existing file and write arg",
	"append":      "open(path, O_WRONLY|O_APPEND) and write arg",
	"trunc-open":  "open(path, O_WRONLY|O_TRUNC)",
	"fifo-write":  "open(path, O_RDWR|O_NONBLOCK) a FIFO (no reader needed) and write arg",
	"truncate":    "truncate(path, 0)",
	"read":        "read the whole file",
	"readdir":     "list a directory (names, sorted)",
	"mkdir":       "mkdir(path, 0755)",
	"rmdir":       "rmdir(path)",
	"unlink":      "unlink(path)",
	"rename":      "rename(path, path2)",
	"link":        "link(path, path2)",
	"symlink":     "symlink(path2, path): path is the new link, path2 its target",
	"mkfifo":      "mknod(path, S_IFIFO|0644)",
	"chmod":       "chmod(path, 0600)",
	"chown":       "chown(path, getuid(), getgid()): a no-op change that still needs the right",
	"utimes":      "utimensat(path, {0, 0})",
	"setxattr":    "setxattr(path, user.conformance, arg)",
	"removexattr": "removexattr(path, user.conformance)",
	"fds":         "map each open descriptor to its /proc/self/fd link target, except the one used to list them",
	"pid":         "getpid()",
	"stdio":       "copy stdin to stdout, and write arg to stderr",
	"exit":        "exit(arg) at once",
	"kill-self":   "kill(getpid(), arg)",
	"wait-signal": "write getpid() to path.tmp and rename it to path (the readiness signal), wait for SIGUSR1, then exit(arg)",
}

// Main runs the helper with args (a JSON list of Op) and returns the process exit status.
func Main(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprintln(stderr, "helper: want exactly one argument, a JSON list of ops")
		return 2
	}
	var ops []Op
	if err := json.Unmarshal([]byte(args[0]), &ops); err != nil {
		fmt.Fprintf(stderr, "helper: parsing ops: %v\n", err)
		return 2
	}
	results := make([]Result, 0, len(ops))
	for _, op := range ops {
		if _, ok := Ops[op.Op]; !ok {
			fmt.Fprintf(stderr, "helper: unknown op %q\n", op.Op)
			return 2
		}
		results = append(results, Do(op, stdout, stderr))
	}
	b, _ := json.Marshal(results)
	fmt.Fprintln(stdout, string(b))
	return 0
}

// Do performs one op. Ops that end the process (exit, kill-self, wait-signal) do not return.
func Do(op Op, stdout, stderr io.Writer) Result {
	r := Result{Op: op.Op, Path: op.Path}
	var err error
	switch op.Op {
	case "create":
		err = writeFile(op.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL, op.Arg)
	case "write":
		err = writeFile(op.Path, unix.O_WRONLY, op.Arg)
	case "append":
		err = writeFile(op.Path, unix.O_WRONLY|unix.O_APPEND, op.Arg)
	case "trunc-open":
		err = writeFile(op.Path, unix.O_WRONLY|unix.O_TRUNC, "")
	case "fifo-write":
		err = writeFile(op.Path, unix.O_RDWR|unix.O_NONBLOCK, op.Arg)
	case "truncate":
		err = unix.Truncate(op.Path, 0)
	case "read":
		var b []byte
		b, err = os.ReadFile(op.Path)
		r.Data = string(b)
	case "readdir":
		var names []string
		var f *os.File
		if f, err = os.Open(op.Path); err == nil {
			names, err = f.Readdirnames(-1)
			f.Close()
			sort.Strings(names)
			b, _ := json.Marshal(names)
			r.Data = string(b)
		}
	case "mkdir":
		err = unix.Mkdir(op.Path, 0o755)
	case "rmdir":
		err = unix.Rmdir(op.Path)
	case "unlink":
		err = unix.Unlink(op.Path)
	case "rename":
		err = unix.Rename(op.Path, op.Path2)
	case "link":
		err = unix.Link(op.Path, op.Path2)
	case "symlink":
		err = unix.Symlink(op.Path2, op.Path)
	case "mkfifo":
		err = unix.Mknod(op.Path, unix.S_IFIFO|0o644, 0)
	case "chmod":
		err = unix.Chmod(op.Path, 0o600)
	case "chown":
		err = unix.Chown(op.Path, os.Getuid(), os.Getgid())
	case "utimes":
		err = unix.UtimesNano(op.Path, []unix.Timespec{{}, {}})
	case "setxattr":
		err = unix.Setxattr(op.Path, "user.conformance", []byte(op.Arg), 0)
	case "removexattr":
		err = unix.Removexattr(op.Path, "user.conformance")
	case "fds":
		r.Data, err = openFDs()
	case "pid":
		r.Data = strconv.Itoa(os.Getpid())
	case "stdio":
		_, err = io.Copy(stdout, os.Stdin)
		fmt.Fprint(stderr, op.Arg)
	case "exit":
		os.Exit(atoi(op.Arg))
	case "kill-self":
		sig := syscall.Signal(atoi(op.Arg))
		// The default action, not signal.Reset's "as at start": a runner started under nohup or in a
		// background job inherits SIGHUP or SIGINT ignored, and the command must still die by them.
		defaultAction(sig)
		err = unix.Kill(os.Getpid(), sig)
		select {} // the signal ends the process; a caught or ignored one is a test failure upstream
	case "wait-signal":
		c := make(chan os.Signal, 1)
		signal.Notify(c, unix.SIGUSR1)
		if op.Path != "" { // written aside and renamed, so that whoever sees the file sees the whole pid
			err := writeFile(op.Path+".tmp", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, strconv.Itoa(os.Getpid()))
			if err == nil {
				err = unix.Rename(op.Path+".tmp", op.Path)
			}
			if err != nil {
				fmt.Fprintf(stderr, "helper: wait-signal: %v\n", err)
				os.Exit(3)
			}
		}
		<-c
		os.Exit(atoi(op.Arg))
	default:
		var meta bool
		if r.Data, err, meta = doMeta(op); !meta {
			r.Data, err = doSide(op, stdout, stderr)
		}
	}
	if err != nil {
		r.Errno = errnoName(err)
	} else {
		r.OK = true
	}
	return r
}

func writeFile(path string, flags int, data string) error {
	fd, err := unix.Open(path, flags|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if data != "" {
		_, err = unix.Write(fd, []byte(data))
	}
	return err
}

func openFDs() (string, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return "", err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return "", err
	}
	fds := map[int]string{}
	for _, n := range names {
		fd, _ := strconv.Atoi(n)
		if uintptr(fd) == d.Fd() {
			continue
		}
		fds[fd], _ = os.Readlink(filepath.Join("/proc/self/fd", n))
	}
	b, _ := json.Marshal(fds)
	return string(b), nil
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("helper: bad integer argument %q", s))
	}
	return n
}

func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
		return "errno " + strconv.Itoa(int(errno))
	}
	return err.Error()
}

// defaultAction sets sig's disposition to SIG_DFL with rt_sigaction(2) itself (struct sigaction as amd64 and
// arm64 take it: handler, flags, restorer, mask) and unblocks it.
func defaultAction(sig syscall.Signal) {
	var dfl [4]uintptr // SIG_DFL, no flags, no restorer, empty mask
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	var set unix.Sigset_t
	set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
}
