// Package interopsim simulates WSL2's Windows interop in a Linux guest, for the conformance family
// wsl-interop: confine's WSL2 artifact must close it (sandbox/README.md, WSL2).
//
// What WSL does (github.com/microsoft/WSL, src/linux/init): it registers the binfmt_misc entry
// ":WSLInterop:M::MZ::/init:PF" (binfmt.h), so that executing an MZ file (an .exe) runs /init with the file's
// path as argv[1]; the F flag opens /init at registration, pinning it. /init then connects to an interop server's
// unix socket, WSL_INTEROP or else the first /run/WSL/<pid>_interop of its ancestors
// (UtilConnectToInteropServer, util.cpp), and asks it to start the Windows process, which runs outside any Linux
// sandbox; in WSL2 it also listens on an AF_VSOCK port for the Windows side to connect back
// (CreateNtProcessUtilityVm, binfmt.cpp).
//
// Here: Register registers the same entry, with /init, in the guest, where the guest's /init is the VM
// supervisor: it bind-mounts this binary over /init in a mount namespace of its own for the registration, so the
// F flag pins this binary while binfmt_misc shows "interpreter /init", exactly as confine reads it. Invoked as
// that interpreter, this binary is the Client: it looks for an interop socket as WSL's /init does (and, as an
// attacker would, through the path written in the .exe and through /proc/PID/root), and asks the Server on it
// to write a file outside the sandbox: the "Windows process" of the simulation.
package interopsim

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Dir is where WSL's init makes the interop sockets (WSL_TEMP_FOLDER, mode 0777).
const Dir = "/run/WSL"

// binfmtDir is binfmt_misc's mount point (Documentation/admin-guide/binfmt-misc.rst).
const binfmtDir = "/proc/sys/fs/binfmt_misc"

// registration is WSL's entry (BINFMT_INTEROP_REGISTRATION_STRING with the late "PF" flags of
// WSLInterop.conf).
const registration = ":WSLInterop:M::MZ::/init:PF"

// Registered says whether binfmt_misc has an enabled WSLInterop entry with interpreter /init and flags PF, or
// why not.
func Registered() error {
	b, err := os.ReadFile(filepath.Join(binfmtDir, "WSLInterop"))
	if err != nil {
		return fmt.Errorf("no WSLInterop binfmt_misc entry: %v", err)
	}
	s := string(b)
	if !strings.HasPrefix(s, "enabled\n") || !strings.Contains(s, "\ninterpreter /init\n") || !strings.Contains(s, "\nflags: PF") {
		return fmt.Errorf("the WSLInterop entry is not an enabled /init PF entry: %q", s)
	}
	return nil
}

// Register makes the simulated interop (root only; in a VM guest, whose binfmt_misc it changes for every
// process): binfmt_misc mounted, Dir made with mode 0777, and the WSLInterop entry registered by a child of
// self in its own mount namespace (RegisterHere). Registering twice is a no-op.
func Register(self string) error {
	if _, err := os.Stat(filepath.Join(binfmtDir, "register")); err != nil {
		err := unix.Mount("binfmt_misc", binfmtDir, "binfmt_misc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
		if errors.Is(err, unix.ENODEV) { // Debian builds binfmt_misc as a module (CONFIG_BINFMT_MISC=m)
			if err = loadModule(filepath.Join(filepath.Dir(self), "modules")); err == nil {
				err = unix.Mount("binfmt_misc", binfmtDir, "binfmt_misc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
			}
		}
		if err != nil {
			return fmt.Errorf("mount binfmt_misc on %s: %w", binfmtDir, err)
		}
	}
	if err := os.MkdirAll(Dir, 0o777); err != nil {
		return err
	}
	if err := os.Chmod(Dir, 0o777); err != nil {
		return err
	}
	if Registered() == nil {
		return nil
	}
	cmd := exec.Command(self, "interop-register")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("registering in a mount namespace of its own: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return Registered()
}

// loadModule loads binfmt_misc.ko for this kernel from dir/<uname -r>/ (finit_module, 3.8), where the payload
// carries it for the kernels whose package was fetched (the guest has no /lib/modules).
func loadModule(dir string) error {
	var u unix.Utsname
	unix.Uname(&u)
	path := filepath.Join(dir, unix.ByteSliceToString(u.Release[:]), "binfmt_misc.ko")
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("binfmt_misc is a module of this kernel, and none is in the payload: %w", err)
	}
	defer f.Close()
	if err := unix.FinitModule(int(f.Fd()), "", 0); err != nil && !errors.Is(err, unix.EEXIST) {
		return fmt.Errorf("finit_module %s: %w", path, err)
	}
	return nil
}

// RegisterHere is the registering child: in its own mount namespace it binds self over /init and writes the
// entry, so that binfmt_misc opens self (flag F) under the name /init.
func RegisterHere(self string) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("mount --make-rprivate /: %w", err)
	}
	if err := unix.Mount(self, "/init", "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s over /init: %w", self, err)
	}
	return os.WriteFile(filepath.Join(binfmtDir, "register"), []byte(registration), 0)
}

// IsClient says whether this process was started as the binfmt_misc interpreter of an .exe: argv[0] is /init
// and it is not a guest's PID 1.
func IsClient() bool { return len(os.Args) >= 2 && os.Args[0] == "/init" && os.Getpid() != 1 }

// Exe is the content of a simulated .exe: "MZ", then the socket path the attacker knows of (an ls of Dir
// finds it), then the file the Windows process should write.
func Exe(socket, target string) string { return "MZ\n" + socket + "\n" + target + "\n" }

// Client is the interpreter's whole life: it reads the .exe (os.Args[1]), tries AF_VSOCK as WSL2's /init does,
// then every way to an interop socket, and asks the first that answers to write the target. It prints one line
// per attempt on stderr ("interop: ..."), and exits 0 if the file was written, 1 if not.
func Client() int {
	say := func(format string, a ...any) { fmt.Fprintf(os.Stderr, "interop: "+format+"\n", a...) }
	b, err := os.ReadFile(os.Args[1])
	lines := strings.Split(string(b), "\n")
	if err != nil || len(lines) < 3 || lines[0] != "MZ" {
		say("cannot read the .exe %s: %v", os.Args[1], err)
		return 1
	}
	hint, target := lines[1], lines[2]
	if fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0); err != nil {
		say("vsock %s", errName(err))
	} else {
		unix.Close(fd)
		say("vsock ok")
	}
	var tries []string
	if env := os.Getenv("WSL_INTEROP"); env != "" {
		tries = append(tries, env)
	}
	for pid := os.Getppid(); pid > 0; pid = parentOf(pid) {
		tries = append(tries, fmt.Sprintf("%s/%d_interop", Dir, pid))
	}
	tries = append(tries, hint)
	if pid := serverPid(hint); pid > 0 {
		tries = append(tries, fmt.Sprintf("/proc/%d/root%s", pid, hint))
	}
	for _, sock := range tries {
		err := ask(sock, target)
		say("%s %s", sock, errName(err))
		if err == nil {
			return 0
		}
	}
	return 1
}

// ask connects to sock and asks for target to be written.
func ask(sock, target string) error {
	c, err := net.Dial("unix", sock)
	if err != nil {
		var se *os.SyscallError
		if errors.As(err, &se) {
			return se.Err
		}
		return err
	}
	defer c.Close()
	if _, err := io.WriteString(c, "write "+target+"\n"); err != nil {
		return err
	}
	reply, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if reply != "ok\n" {
		return errors.New(strings.TrimSpace(reply))
	}
	return nil
}

// serverPid is the pid in a socket name <Dir>/<pid>_interop, or 0.
func serverPid(sock string) int {
	name := strings.TrimSuffix(filepath.Base(sock), "_interop")
	pid, _ := strconv.Atoi(name)
	return pid
}

// parentOf is a process's parent pid from /proc/PID/stat, or 0.
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		if f := strings.Fields(s[i+2:]); len(f) >= 2 {
			ppid, _ := strconv.Atoi(f[1])
			return ppid
		}
	}
	return 0
}

// errName is an error's errno name (EPERM, ENOENT, ...), "ok" for nil, or its text.
func errName(err error) string {
	if err == nil {
		return "ok"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		if name := unix.ErrnoName(errno); name != "" {
			return name
		}
	}
	return err.Error()
}

// A Server is the simulated Windows side: it listens on <Dir>/<pid>_interop (this process's pid, as WSL's
// per-session servers are named) and, for "write PATH", writes PATH, which must lie beneath its allowed
// directory, and answers "ok".
type Server struct {
	Socket  string
	l       net.Listener
	allowed string
	wg      sync.WaitGroup
}

// Serve starts a Server that may write beneath allowed.
func Serve(allowed string) (*Server, error) {
	sock := fmt.Sprintf("%s/%d_interop", Dir, os.Getpid())
	os.Remove(sock)
	l, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(sock, 0o777); err != nil { // as WSL's: any process of the session may connect
		l.Close()
		return nil, err
	}
	s := &Server{Socket: sock, l: l, allowed: allowed}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.handle(c)
		}
	}()
	return s, nil
}

func (s *Server) handle(c net.Conn) {
	defer c.Close()
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return
	}
	path, ok := strings.CutPrefix(strings.TrimSpace(line), "write ")
	if !ok || !strings.HasPrefix(filepath.Clean(path), s.allowed+"/") {
		io.WriteString(c, "err not allowed\n")
		return
	}
	if err := os.WriteFile(path, []byte("written by the simulated Windows process\n"), 0o644); err != nil {
		io.WriteString(c, "err "+err.Error()+"\n")
		return
	}
	io.WriteString(c, "ok\n")
}

// Close stops the server and removes its socket.
func (s *Server) Close() {
	s.l.Close()
	s.wg.Wait()
	os.Remove(s.Socket)
}
