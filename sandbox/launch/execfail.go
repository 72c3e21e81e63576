package launch

import (
	"encoding/binary"
	"errors"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/report"
)

// An execve that fails after the report said "exec" is explained, after the fact, from the file itself: only
// then, because binfmt_misc (qemu-user, say) can make a foreign binary or a script runnable, so nothing is
// refused beforehand. The ELF header is read by hand (debug/elf would bring compress/zlib and its own readers
// into a launcher that must stay small and depend on x/sys only): the
// identification, e_machine, and the program headers for PT_INTERP (include/uapi/linux/elf.h; the System V
// gABI, "ELF Header" and "Program Header").

// execFailure is what a failed execve of a file means.
type execFailure struct {
	reason      report.Reason
	status      int
	errno       string
	text        string // the message after "argv0: "
	machine     string // wrong-arch: the ELF's machine
	host        string // wrong-arch: uname -m
	interpreter string // interpreter-missing: the missing path
}

// classifyExec explains err, execve's error for path: the file is missing (command-not-found, 127), its
// interpreter is missing (interpreter-missing, 127: PT_INTERP, or a #! line, nested as the kernel nests them),
// it is an ELF for another machine (wrong-arch, 126), or it cannot be executed otherwise (126).
func classifyExec(path string, err error) execFailure {
	var errno unix.Errno
	f := execFailure{reason: report.CommandNotExec, status: ExitCannotExec, text: err.Error()}
	if errors.As(err, &errno) {
		f.errno = execErrnoName(errno)
	}
	switch {
	case errno == unix.ENOENT:
		f.reason, f.status = report.CommandNotFound, ExitNotFound
		if interp, how := missingInterpreter(path, 0); interp != "" {
			f.reason, f.interpreter = report.InterpreterMissing, interp
			f.text = msg.Str(how, " ", interp, " is missing (", err.Error(), ")")
		}
	case errno == unix.ENOEXEC:
		if m, ok := elfMachineOf(path); ok {
			if host := unameMachine(); m != host {
				f.reason, f.machine, f.host = report.WrongArch, m, host
				f.text = msg.Str("ELF ", m, " on ", host, " (", err.Error(), ")")
			}
		}
	}
	return f
}

// maxScriptDepth is how deeply the kernel nests #! interpreters (BINPRM_MAX_RECURSION, fs/exec.c).
const maxScriptDepth = 4

// missingInterpreter finds the interpreter execve could not find for path: its #! interpreter, or its ELF
// PT_INTERP, followed as the kernel does. how says which ("interpreter" or "#! interpreter"). It returns ""
// when path itself is missing, or every interpreter exists.
func missingInterpreter(path string, depth int) (interp, how string) {
	head, ok := readHead(path)
	if !ok || depth > maxScriptDepth {
		return "", ""
	}
	switch {
	case strings.HasPrefix(string(head), "#!"):
		interp, how = shebang(head), "#! interpreter"
	case isELF(head):
		interp, how = elfInterp(path), "ELF interpreter"
	}
	if interp == "" {
		return "", ""
	}
	var st unix.Stat_t
	if err := unix.Stat(interp, &st); errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return interp, how
	}
	return missingInterpreter(interp, depth+1)
}

// readHead reads the first bytes of path, as many as the kernel looks at for #! (BINPRM_BUF_SIZE).
func readHead(path string) ([]byte, bool) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer unix.Close(fd)
	b := make([]byte, 256)
	n, err := unix.Pread(fd, b, 0)
	if err != nil || n <= 0 {
		return nil, false
	}
	return b[:n], true
}

// shebang is the interpreter of a #! line: the first word after "#!", as fs/binfmt_script.c splits it.
func shebang(head []byte) string {
	line := string(head[2:])
	if i := strings.IndexAny(line, "\n\x00"); i >= 0 {
		line = line[:i]
	}
	if f := strings.Fields(line); len(f) > 0 {
		return f[0]
	}
	return ""
}

func isELF(b []byte) bool { return len(b) >= 20 && string(b[:4]) == "\x7fELF" }

// elfHeader is what the launcher reads of an ELF header.
type elfHeader struct {
	order            binary.ByteOrder
	is64             bool
	machine          uint16
	phoff            uint64
	phentsize, phnum uint64
}

// parseELF reads the identification and the header fields it needs from b (the file's first bytes).
func parseELF(b []byte) (elfHeader, bool) {
	if !isELF(b) || len(b) < 52 {
		return elfHeader{}, false
	}
	h := elfHeader{is64: b[4] == 2}
	switch b[5] { // EI_DATA
	case 1:
		h.order = binary.LittleEndian
	case 2:
		h.order = binary.BigEndian
	default:
		return elfHeader{}, false
	}
	h.machine = h.order.Uint16(b[18:])
	if h.is64 {
		if len(b) < 64 {
			return elfHeader{}, false
		}
		h.phoff, h.phentsize, h.phnum = h.order.Uint64(b[32:]), uint64(h.order.Uint16(b[54:])), uint64(h.order.Uint16(b[56:]))
	} else {
		h.phoff, h.phentsize, h.phnum = uint64(h.order.Uint32(b[28:])), uint64(h.order.Uint16(b[42:])), uint64(h.order.Uint16(b[44:]))
	}
	return h, true
}

// elfMachineOf is the machine an ELF file is for (by uname -m's name where it has one), if path is an ELF.
func elfMachineOf(path string) (string, bool) {
	head, ok := readHead(path)
	if !ok {
		return "", false
	}
	h, ok := parseELF(head)
	if !ok {
		return "", false
	}
	return machineName(h.machine, h.is64), true
}

// elfInterp is the PT_INTERP path of an ELF file, or "" if it has none or cannot be read.
func elfInterp(path string) string {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	head := make([]byte, 64)
	if n, _ := unix.Pread(fd, head, 0); n < len(head) {
		return ""
	}
	h, ok := parseELF(head)
	if !ok || h.phnum > 256 || h.phentsize < 32 || h.phentsize > 256 {
		return ""
	}
	ph := make([]byte, h.phnum*h.phentsize)
	if n, _ := unix.Pread(fd, ph, int64(h.phoff)); uint64(n) < uint64(len(ph)) {
		return ""
	}
	const ptInterp = 3
	for i := uint64(0); i < h.phnum; i++ {
		p := ph[i*h.phentsize:]
		if h.order.Uint32(p) != ptInterp {
			continue
		}
		var off, size uint64
		if h.is64 {
			off, size = h.order.Uint64(p[8:]), h.order.Uint64(p[32:])
		} else {
			off, size = uint64(h.order.Uint32(p[4:])), uint64(h.order.Uint32(p[16:]))
		}
		if size == 0 || size > unix.PathMax {
			return ""
		}
		s := make([]byte, size)
		if n, _ := unix.Pread(fd, s, int64(off)); uint64(n) < size {
			return ""
		}
		return unix.ByteSliceToString(s)
	}
	return ""
}

// machineName names an ELF e_machine as uname -m does on Linux (include/uapi/linux/elf-em.h).
func machineName(m uint16, is64 bool) string {
	switch m {
	case 3:
		return "i386"
	case 8:
		return "mips"
	case 20:
		return "ppc"
	case 21:
		return "ppc64"
	case 22:
		return "s390x"
	case 40:
		return "arm"
	case 62:
		return "x86_64"
	case 183:
		return "aarch64"
	case 243:
		if is64 {
			return "riscv64"
		}
		return "riscv32"
	case 258:
		return "loongarch64"
	}
	return msg.Str("machine ", uint64(m))
}

// unameMachine is this kernel's machine, uname -m.
func unameMachine() string {
	var u unix.Utsname
	unix.Uname(&u)
	return unix.ByteSliceToString(u.Machine[:])
}

// execFailed turns execve's error into an *ExecError and, when there is a report, writes the exec-failed
// record after it and closes the report's descriptor: the process that calls it owns that descriptor now.
func execFailed(path string, argv []string, err error, reportFD int) *ExecError {
	f := classifyExec(path, err)
	ee := &ExecError{Status: f.status, Reason: f.reason, Err: msg.Err(argv[0], ": ", f.text)}
	if reportFD >= 0 {
		rec := report.ExecFailed{Schema: report.ExecFailedSchema, Outcome: "exec-failed", Reason: f.reason,
			Error: report.OneLine(ee.Error()), Errno: f.errno, Status: f.status,
			Command: append([]string{path}, argv[1:]...), Machine: f.machine, Host: f.host, Interpreter: f.interpreter}
		writeAll(reportFD, rec.Marshal()) // best effort: stderr says it too
		unix.Close(reportFD)
	}
	return ee
}

// execErrnoName is the uapi name of an errno execve(2) can return (its ERRORS section), else "errno N": a
// table of these alone, not x/sys's of every errno (ErrnoName, 5 KB).
func execErrnoName(e unix.Errno) string {
	for _, n := range []struct {
		e    unix.Errno
		name string
	}{{unix.E2BIG, "E2BIG"}, {unix.EACCES, "EACCES"}, {unix.EAGAIN, "EAGAIN"}, {unix.EFAULT, "EFAULT"},
		{unix.EINVAL, "EINVAL"}, {unix.EIO, "EIO"}, {unix.EISDIR, "EISDIR"}, {unix.ELIBBAD, "ELIBBAD"},
		{unix.ELOOP, "ELOOP"}, {unix.EMFILE, "EMFILE"}, {unix.ENAMETOOLONG, "ENAMETOOLONG"}, {unix.ENFILE, "ENFILE"},
		{unix.ENOENT, "ENOENT"}, {unix.ENOEXEC, "ENOEXEC"}, {unix.ENOMEM, "ENOMEM"}, {unix.ENOTDIR, "ENOTDIR"},
		{unix.EPERM, "EPERM"}, {unix.ETXTBSY, "ETXTBSY"}} {
		if n.e == e {
			return n.name
		}
	}
	return "errno " + msg.Itoa(int(e))
}
