package helper

// The side-channel attacks: each op is what a confined command would do to reach state outside its writable set
// without writing a file there (IPC objects, setuid bits, terminals, signals, sockets, keyrings, rlimits, core
// dumps), or to change metadata through a route the filesystem rules do not see (io_uring, file_setattr). The
// runner checks the outside state afterwards; these ops only attack and report the errno.

import (
	"archive/tar"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// sideOps are the side-channel ops, merged into Ops.
var sideOps = map[string]string{
	"fchmodat":        "fchmodat(path2 as a descriptor number, or AT_FDCWD when empty, path, arg as octal mode)",
	"fchmod-fd":       "fchmod(path as a descriptor number, arg as octal mode)",
	"write-fd":        "write(path as a descriptor number, arg)",
	"create-mode":     "open(path, O_WRONLY|O_CREAT|O_EXCL, arg as octal mode), umask 0",
	"mknod-reg":       "mknod(path, S_IFREG|arg as octal mode), umask 0",
	"openat2-mode":    "openat2(AT_FDCWD, path, {O_WRONLY|O_CREAT|O_EXCL, arg as octal mode}), umask 0",
	"untar":           "extract the tar archive at path2 into directory path as tar -p does: create each file, then chmod it to the archived mode",
	"setxattr-hex":    "setxattr(path, path2 as the name, arg hex-decoded as the value)",
	"mq-create":       "mq_open(path, O_CREAT|O_RDWR, 0600)",
	"mq-unlink":       "mq_unlink(path)",
	"msgget-create":   "msgget(arg as the key, IPC_CREAT|0600)",
	"msg-rmid":        "msgctl(msgget(arg as the key, 0), IPC_RMID)",
	"kill":            "kill(path as a pid, arg as a signal number)",
	"pidfd-kill":      "pidfd_send_signal(pidfd_open(path as a pid), arg as a signal number)",
	"sigio":           "make a pipe O_ASYNC with F_SETOWN = path as a pid, then write to it: the kernel sends SIGIO to that pid",
	"prlimit-nofile":  "prlimit64(path as a pid, RLIMIT_NOFILE, {arg, arg})",
	"kill-dropped":    "start a child of ours (linger 1500), setresuid to path (all threads), kill(child, arg as a signal number), then wait for the child: data alive (it exited 0) or killed (by a signal)",
	"linger":          "sleep arg milliseconds, then exit 0",
	"fchmod-dropped":  "open(path, O_RDONLY); a child (op fchmod-as) setresuids to path2 and fchmods it 0666; then fchmod(fd, arg in octal) ourselves: data child:OK or child:ERRNO (no-setuid where the uid cannot be had)",
	"fchmod-as":       "setresuid to path2 (all threads), then fchmod(3, arg in octal): descriptor 3 is inherited",
	"unix-connect":    "connect a SOCK_STREAM unix socket to path ('@name' is abstract) and write arg",
	"add-key":         "add_key(\"user\", path, arg, path2: session, user, or a keyring serial number)",
	"key-rewrite":     "link keyring path2 (user, or a serial number) into the session keyring, search it for the user key path linking the find there, then add_key(\"user\", path, arg, session): an update in place of a possessed key",
	"flock-hold":      "open path read-only and flock(LOCK_EX|LOCK_NB) it, keeping the descriptor open until the process ends",
	"user-keyring-id": "keyctl(KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, create): the user keyring's serial",
	"uring-setxattr":  "io_uring IORING_OP_SETXATTR (5.19) on path: user.conformance = arg",
	"uring-open-mode": "io_uring IORING_OP_OPENAT of path with O_WRONLY|O_CREAT|O_EXCL and arg as octal mode, umask 0",
	"file-setattr":    "file_setattr(AT_FDCWD, path, {fa_xflags: arg}) (6.17): an inode flag by path",
	"setxattrat":      "setxattrat(AT_FDCWD, path, 0, user.conformance, {value: arg}) (6.13): an xattr by path",
	"removexattrat":   "removexattrat(AT_FDCWD, path, 0, user.conformance) (6.13): an xattr removed by path",
	"mount-clone-rw":  "clone the directory of the file at path by open_tree (5.2) and make the clone read-write (mount_setattr, 5.12), then by open_tree_attr (6.15); through each clone append arg to the file and chmod it 0604; data: each step's errno, the mount steps named \"mount …\"",
	"mount-table-rw":  "make the mount holding the file at path read-write (remount keeping its other flags; mount_setattr clearing MOUNT_ATTR_RDONLY, recursively), append arg to the file and chmod it 0604, then umount2 that mount (MNT_DETACH) and try again; changes the mount table where it is not denied: the VM, or --destructive; data as mount-clone-rw",
	"victim":          "(unconfined) write getpid() to path, then wait: on SIGUSR1 exit 0 silently, on SIGTERM, SIGIO or SIGHUP write the signal's name to path2 and exit 0",
	"core-wait":       "try setrlimit(RLIMIT_CORE, unlimited), write getpid() to path (via path.tmp), wait for SIGUSR1, then abort (SIGABRT, default action)",
	"session-keyring": "(unconfined) join a new session keyring named path, run the argv in arg (JSON) with descriptors 3 and up inherited, and return its exit status and the descriptions of the keys then in that keyring",
	"cap-status":      "the Cap* and NoNewPrivs lines of /proc/self/status",
	"rlimit-core":     "getrlimit(RLIMIT_CORE) as soft/hard",
	"tty-resize":      "ioctl(0, TIOCSWINSZ, 91 rows by 191 columns): the kernel sends SIGWINCH to the terminal's foreground process group",
	"tty-disturb":     "on descriptor 0: ioctl TIOCSETD to N_NULL (27), TIOCEXCL, and TCXONC with TCOOFF (tcflow): data is each one's errno or ok, as NAME:RESULT",
	"tty-foreground":  "with SIGTTOU and SIGTTIN ignored, setpgid(0, 0) and then ioctl(0, TIOCSPGRP, our process group) (tcsetpgrp), create path2, and wait until path exists (at most 30 s): data is the setpgid step's errno, if any",
}

func init() {
	for k, v := range sideOps {
		Ops[k] = v
	}
}

// doSide performs a side-channel op (one of sideOps) and returns what it read, if anything.
func doSide(op Op, stdout, stderr io.Writer) (data string, err error) {
	switch op.Op {
	case "fchmodat":
		fd := unix.AT_FDCWD
		if op.Path2 != "" {
			fd = atoi(op.Path2)
		}
		return "", unix.Fchmodat(fd, op.Path, octal(op.Arg), 0)
	case "fchmod-fd":
		return "", unix.Fchmod(atoi(op.Path), octal(op.Arg))
	case "write-fd":
		_, err = unix.Write(atoi(op.Path), []byte(op.Arg))
		return "", err
	case "create-mode":
		unix.Umask(0)
		fd, err := unix.Open(op.Path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, octal(op.Arg))
		if err == nil {
			unix.Close(fd)
		}
		return "", err
	case "mknod-reg":
		unix.Umask(0)
		return "", unix.Mknod(op.Path, unix.S_IFREG|octal(op.Arg), 0)
	case "openat2-mode":
		unix.Umask(0)
		fd, err := unix.Openat2(unix.AT_FDCWD, op.Path, &unix.OpenHow{Flags: unix.O_WRONLY | unix.O_CREAT | unix.O_EXCL | unix.O_CLOEXEC, Mode: uint64(octal(op.Arg))})
		if err == nil {
			unix.Close(fd)
		}
		return "", err
	case "untar":
		return untar(op.Path, op.Path2)
	case "setxattr-hex":
		v, err := hex.DecodeString(op.Arg)
		if err != nil {
			return "", err
		}
		return "", unix.Setxattr(op.Path, op.Path2, v, 0)
	case "mq-create":
		fd, err := mqOpen(op.Path, unix.O_CREAT|unix.O_RDWR, 0o600)
		if err == nil {
			unix.Close(fd)
		}
		return "", err
	case "mq-unlink":
		return "", MqUnlink(op.Path)
	case "msgget-create":
		_, err := Msgget(atoi(op.Arg), unix.IPC_CREAT|0o600)
		return "", err
	case "msg-rmid":
		id, err := Msgget(atoi(op.Arg), 0)
		if err != nil {
			return "", err
		}
		return "", MsgRmid(id)
	case "kill":
		return "", unix.Kill(atoi(op.Path), unix.Signal(atoi(op.Arg)))
	case "pidfd-kill":
		fd, err := unix.PidfdOpen(atoi(op.Path), 0)
		if err != nil {
			return "", err
		}
		defer unix.Close(fd)
		return "", unix.PidfdSendSignal(fd, unix.Signal(atoi(op.Arg)), nil, 0)
	case "kill-dropped":
		return killDropped(atoi(op.Path), unix.Signal(atoi(op.Arg)))
	case "fchmod-dropped":
		return fchmodDropped(op)
	case "fchmod-as":
		uid := atoi(op.Path2)
		if err := unix.Setresuid(uid, uid, uid); err != nil {
			return "no-setuid", err
		}
		mode, err := strconv.ParseUint(op.Arg, 8, 32)
		if err != nil {
			return "", err
		}
		return "", unix.Fchmod(3, uint32(mode))
	case "linger":
		time.Sleep(time.Duration(atoi(op.Arg)) * time.Millisecond)
		os.Exit(0)
		return "", nil
	case "sigio":
		return "", sigio(atoi(op.Path))
	case "prlimit-nofile":
		n := uint64(atoi(op.Arg))
		return "", unix.Prlimit(atoi(op.Path), unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: n, Max: n}, nil)
	case "unix-connect":
		return "", unixConnect(op.Path, op.Arg)
	case "add-key":
		ring := unix.KEY_SPEC_SESSION_KEYRING
		switch op.Path2 {
		case "session":
		case "user":
			ring = unix.KEY_SPEC_USER_KEYRING
		default:
			ring = atoi(op.Path2)
		}
		id, err := unix.AddKey("user", op.Path, []byte(op.Arg), ring)
		return strconv.Itoa(id), err
	case "key-rewrite":
		ring := unix.KEY_SPEC_USER_KEYRING
		if op.Path2 != "user" {
			ring = atoi(op.Path2)
		}
		unix.KeyctlInt(unix.KEYCTL_LINK, ring, unix.KEY_SPEC_SESSION_KEYRING, 0, 0)
		unix.KeyctlSearch(unix.KEY_SPEC_SESSION_KEYRING, "user", op.Path, unix.KEY_SPEC_SESSION_KEYRING)
		id, err := unix.AddKey("user", op.Path, []byte(op.Arg), unix.KEY_SPEC_SESSION_KEYRING)
		return strconv.Itoa(id), err
	case "flock-hold":
		fd, err := unix.Open(op.Path, unix.O_RDONLY, 0) // not close-on-exec, never closed: held to the end
		if err != nil {
			return "", err
		}
		return "", unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
	case "user-keyring-id":
		id, err := unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_USER_KEYRING, 1, 0, 0)
		return strconv.Itoa(id), err
	case "uring-setxattr":
		name, val := []byte("user.conformance\x00"), []byte(op.Arg)
		path := []byte(op.Path + "\x00")
		var sqe [64]byte
		sqe[0] = ioringOpSetxattr
		binary.LittleEndian.PutUint64(sqe[8:], uint64(uintptr(unsafe.Pointer(&val[0]))))   // addr2: value
		binary.LittleEndian.PutUint64(sqe[16:], uint64(uintptr(unsafe.Pointer(&name[0])))) // addr: name
		binary.LittleEndian.PutUint32(sqe[24:], uint32(len(val)))                          // len: size
		binary.LittleEndian.PutUint64(sqe[48:], uint64(uintptr(unsafe.Pointer(&path[0])))) // addr3: path
		res, err := uringOne(sqe)
		runtime.KeepAlive(name)
		runtime.KeepAlive(val)
		runtime.KeepAlive(path)
		if err == nil && res < 0 {
			err = unix.Errno(-res)
		}
		return "", err
	case "uring-open-mode":
		unix.Umask(0)
		path := []byte(op.Path + "\x00")
		var sqe [64]byte
		sqe[0] = ioringOpOpenat
		dfd := int32(unix.AT_FDCWD)
		binary.LittleEndian.PutUint32(sqe[4:], uint32(dfd))
		binary.LittleEndian.PutUint64(sqe[16:], uint64(uintptr(unsafe.Pointer(&path[0]))))
		binary.LittleEndian.PutUint32(sqe[24:], octal(op.Arg))
		binary.LittleEndian.PutUint32(sqe[28:], uint32(unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC))
		res, err := uringOne(sqe)
		runtime.KeepAlive(path)
		if err == nil {
			if res < 0 {
				err = unix.Errno(-res)
			} else {
				unix.Close(int(res))
			}
		}
		return "", err
	case "file-setattr":
		// struct file_attr (include/uapi/linux/fs.h, 6.17): fa_xflags u64, fa_extsize, fa_nextents, fa_projid,
		// fa_cowextsize u32: FILE_ATTR_SIZE_VER0 = 24 bytes.
		var attr [24]byte
		binary.LittleEndian.PutUint64(attr[0:], uint64(atoi(op.Arg)))
		p, err := unix.BytePtrFromString(op.Path)
		if err != nil {
			return "", err
		}
		dfd := unix.AT_FDCWD
		_, _, e := unix.Syscall6(unix.SYS_FILE_SETATTR, uintptr(dfd), uintptr(unsafe.Pointer(p)),
			uintptr(unsafe.Pointer(&attr[0])), uintptr(len(attr)), 0, 0)
		if e != 0 {
			return "", e
		}
		return "", nil
	case "setxattrat", "removexattrat":
		p, err := unix.BytePtrFromString(op.Path)
		if err != nil {
			return "", err
		}
		name, _ := unix.BytePtrFromString("user.conformance")
		value, _ := unix.BytePtrFromString(op.Arg)
		args := xattrArgs{Value: value, Size: uint32(len(op.Arg))}
		dfd, e := unix.AT_FDCWD, unix.Errno(0)
		if op.Op == "setxattrat" {
			_, _, e = unix.Syscall6(unix.SYS_SETXATTRAT, uintptr(dfd), uintptr(unsafe.Pointer(p)), 0,
				uintptr(unsafe.Pointer(name)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
		} else {
			_, _, e = unix.Syscall6(unix.SYS_REMOVEXATTRAT, uintptr(dfd), uintptr(unsafe.Pointer(p)), 0,
				uintptr(unsafe.Pointer(name)), 0, 0)
		}
		if e != 0 {
			return "", e
		}
		return "", nil
	case "mount-clone-rw":
		return mountCloneRW(op.Path, op.Arg), nil
	case "mount-table-rw":
		return mountTableRW(op.Path, op.Arg), nil
	case "victim":
		c := make(chan os.Signal, 4)
		signal.Notify(c, unix.SIGUSR1, unix.SIGTERM, unix.SIGIO, unix.SIGHUP)
		if err := writeFile(op.Path+".tmp", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, strconv.Itoa(os.Getpid())); err != nil {
			return "", err
		}
		if err := unix.Rename(op.Path+".tmp", op.Path); err != nil {
			return "", err
		}
		// The runtime hands signals that are pending together to c in signal-number order, not in the order they
		// came: a SIGTERM the command sent, still pending when the runner's SIGUSR1 arrives (a loaded host), comes
		// after SIGUSR1 (10 < 15). So once SIGUSR1 is in, whatever else arrives within a short while is recorded.
		var grace <-chan time.Time
		for {
			select {
			case s := <-c:
				if s != unix.SIGUSR1 {
					writeFile(op.Path2, unix.O_WRONLY|unix.O_CREAT|unix.O_APPEND, unix.SignalName(s.(unix.Signal))+"\n")
					os.Exit(0)
				}
				if grace == nil {
					grace = time.After(500 * time.Millisecond)
				}
			case <-grace:
				os.Exit(0)
			}
		}
	case "core-wait":
		inf := &unix.Rlimit{Cur: unix.RLIM_INFINITY, Max: unix.RLIM_INFINITY}
		if unix.Setrlimit(unix.RLIMIT_CORE, inf) != nil {
			var cur unix.Rlimit
			unix.Getrlimit(unix.RLIMIT_CORE, &cur)
			cur.Cur = cur.Max
			unix.Setrlimit(unix.RLIMIT_CORE, &cur)
		}
		c := make(chan os.Signal, 1)
		signal.Notify(c, unix.SIGUSR1)
		if err := writeFile(op.Path+".tmp", unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, strconv.Itoa(os.Getpid())); err == nil {
			unix.Rename(op.Path+".tmp", op.Path)
		}
		<-c
		// The default action (a core dump), not the Go runtime's handler: rt_sigaction(SIGABRT, SIG_DFL), then
		// raise it on this thread with the signal unblocked.
		runtime.LockOSThread()
		var sa [4]uint64 // struct sigaction: handler SIG_DFL (0), flags, restorer, mask
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGABRT), uintptr(unsafe.Pointer(&sa[0])), 0, 8, 0, 0)
		var set unix.Sigset_t
		set.Val[0] = 1 << (uint(unix.SIGABRT) - 1)
		unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
		unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		unix.Tgkill(os.Getpid(), unix.Gettid(), unix.SIGABRT)
		select {}
	case "session-keyring":
		return sessionKeyring(op.Path, op.Arg, stdout, stderr)
	case "cap-status":
		b, err := os.ReadFile("/proc/self/status")
		var lines []string
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "Cap") || strings.HasPrefix(l, "NoNewPrivs") {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n"), err
	case "tty-resize":
		return "", unix.IoctlSetWinsize(0, unix.TIOCSWINSZ, &unix.Winsize{Row: 91, Col: 191})
	case "tty-foreground":
		return ttyForeground(op.Path, op.Path2)
	case "tty-disturb":
		var out []string
		for _, c := range []struct {
			name string
			req  uint
			arg  int
		}{{"TIOCSETD", unix.TIOCSETD, 27}, {"TIOCEXCL", unix.TIOCEXCL, 0}, {"TCXONC", unix.TCXONC, unix.TCOOFF}} {
			var err error
			if c.name == "TIOCSETD" {
				err = unix.IoctlSetPointerInt(0, c.req, c.arg)
			} else {
				err = unix.IoctlSetInt(0, c.req, c.arg)
			}
			res := "ok"
			if err != nil {
				res = errnoName(err)
			}
			out = append(out, c.name+":"+res)
		}
		return strings.Join(out, " "), nil
	case "rlimit-core":
		var r unix.Rlimit
		err := unix.Getrlimit(unix.RLIMIT_CORE, &r)
		return fmt.Sprintf("%d/%d", r.Cur, r.Max), err
	}
	return "", fmt.Errorf("helper: unknown side op %q", op.Op)
}

// ttyForeground puts this process in a process group of its own and that group in the foreground of the terminal on
// descriptor 0, as a shell does for a job, so that the caller's next read of the terminal would stop it with
// SIGTTIN. It then creates ready and waits (at most 30 s) until release exists, so that the runner can read the
// terminal's foreground while the command still runs (when the command's session leader ends, the terminal has
// none). The error is tcsetpgrp's; a failed setpgid (already a group leader) is only reported in data.
func ttyForeground(release, ready string) (string, error) {
	signal.Ignore(unix.SIGTTOU, unix.SIGTTIN)
	var data string
	if err := unix.Setpgid(0, 0); err != nil {
		data = "setpgid: " + errnoName(err)
	}
	err := unix.IoctlSetPointerInt(0, unix.TIOCSPGRP, unix.Getpgrp())
	if werr := writeFile(ready, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, "ready"); werr != nil {
		return data, werr
	}
	for i := 0; i < 3000; i++ {
		if _, serr := os.Stat(release); serr == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return data, err
}

func octal(s string) uint32 {
	n, err := strconv.ParseUint(s, 8, 32)
	if err != nil {
		panic(fmt.Sprintf("helper: bad octal mode %q", s))
	}
	return uint32(n)
}

// untar extracts archive into dir as GNU tar -p does for regular files: create, write, then chmod to the
// archived mode (setuid and setgid bits included). A failed chmod fails the op.
func untar(dir, archive string) (string, error) {
	f, err := os.Open(archive)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", err
		}
		p := filepath.Join(dir, filepath.Clean("/"+h.Name))
		fd, err := unix.Open(p, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return "", err
		}
		b, _ := io.ReadAll(tr)
		unix.Write(fd, b)
		err = unix.Fchmod(fd, uint32(h.Mode)&0o7777)
		unix.Close(fd)
		if err != nil {
			return "", err
		}
	}
}

// mqOpen is mq_open(3): the system call takes the name without its leading slash.
func mqOpen(name string, flags, mode int) (int, error) {
	p, err := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	if err != nil {
		return -1, err
	}
	fd, _, e := unix.Syscall6(unix.SYS_MQ_OPEN, uintptr(unsafe.Pointer(p)), uintptr(flags|unix.O_CLOEXEC), uintptr(mode), 0, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// MqExists reports whether the POSIX message queue name exists in the caller's IPC namespace (mq_open without
// O_CREAT: ENOENT when it does not). Used by the runner, outside confine.
func MqExists(name string) (bool, error) {
	fd, err := mqOpen(name, unix.O_RDONLY, 0)
	if err == nil {
		unix.Close(fd)
		return true, nil
	}
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if errors.Is(err, unix.EACCES) { // exists, not ours to open
		return true, nil
	}
	return false, err
}

// MqCreate creates the queue name (mode 0600) in the caller's IPC namespace.
func MqCreate(name string) error {
	fd, err := mqOpen(name, unix.O_CREAT|unix.O_RDWR, 0o600)
	if err == nil {
		unix.Close(fd)
	}
	return err
}

// MqUnlink is mq_unlink(3).
func MqUnlink(name string) error {
	p, err := unix.BytePtrFromString(strings.TrimPrefix(name, "/"))
	if err != nil {
		return err
	}
	if _, _, e := unix.Syscall(unix.SYS_MQ_UNLINK, uintptr(unsafe.Pointer(p)), 0, 0); e != 0 {
		return e
	}
	return nil
}

// Msgget is msgget(2).
func Msgget(key, flags int) (int, error) {
	id, _, e := unix.Syscall(unix.SYS_MSGGET, uintptr(key), uintptr(flags), 0)
	if e != 0 {
		return -1, e
	}
	return int(id), nil
}

// MsgRmid is msgctl(id, IPC_RMID, NULL).
func MsgRmid(id int) error {
	if _, _, e := unix.Syscall(unix.SYS_MSGCTL, uintptr(id), unix.IPC_RMID, 0); e != 0 {
		return e
	}
	return nil
}

// sigio makes the kernel send SIGIO to pid: an O_ASYNC pipe owned (F_SETOWN) by pid, written to.
func sigio(pid int) error {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return err
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETOWN, pid); err != nil {
		return err
	}
	fl, err := unix.FcntlInt(uintptr(p[0]), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), unix.F_SETFL, fl|unix.O_ASYNC); err != nil {
		return err
	}
	_, err = unix.Write(p[1], []byte("x"))
	return err
}

func unixConnect(path, data string) error {
	addr := &unix.SockaddrUnix{Name: path}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Connect(fd, addr); err != nil {
		return err
	}
	_, err = unix.Write(fd, []byte(data))
	return err
}

// io_uring opcodes (include/uapi/linux/io_uring.h, enum io_uring_op).
const (
	ioringOpOpenat   = 18
	ioringOpSetxattr = 42
	ioringOffSQRing  = 0
	ioringOffCQRing  = 0x8000000
	ioringOffSQEs    = 0x10000000
	ioringEnterGetEv = 1
)

// ioUringParams is struct io_uring_params (120 bytes).
type ioUringParams struct {
	SQEntries, CQEntries, Flags, SQThreadCPU, SQThreadIdle, Features, WQFd uint32
	Resv                                                                   [3]uint32
	SQOff                                                                  [10]uint32 // head tail ring_mask ring_entries flags dropped array resv1 user_addr(u64)
	CQOff                                                                  [10]uint32 // head tail ring_mask ring_entries overflow cqes flags resv1 user_addr(u64)
}

// uringOne submits one SQE on a fresh one-entry ring and waits for its completion; it returns the CQE's res.
func uringOne(sqe [64]byte) (int32, error) {
	var p ioUringParams
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return 0, e
	}
	defer unix.Close(int(fd))
	sqLen := int(p.SQOff[6]) + int(p.SQEntries)*4
	sq, err := unix.Mmap(int(fd), ioringOffSQRing, sqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(sq)
	cqLen := int(p.CQOff[5]) + int(p.CQEntries)*16
	cq, err := unix.Mmap(int(fd), ioringOffCQRing, cqLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(cq)
	sqes, err := unix.Mmap(int(fd), ioringOffSQEs, 64*int(p.SQEntries), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(sqes)
	copy(sqes[0:64], sqe[:])
	tail := (*uint32)(unsafe.Pointer(&sq[p.SQOff[1]]))
	mask := *(*uint32)(unsafe.Pointer(&sq[p.SQOff[2]]))
	idx := *tail & mask
	*(*uint32)(unsafe.Pointer(&sq[int(p.SQOff[6])+4*int(idx)])) = 0
	*tail = *tail + 1 // a plain store; the system call below is the barrier
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_ENTER, fd, 1, 1, ioringEnterGetEv, 0, 0); e != 0 {
		return 0, e
	}
	head := *(*uint32)(unsafe.Pointer(&cq[p.CQOff[0]]))
	cmask := *(*uint32)(unsafe.Pointer(&cq[p.CQOff[2]]))
	off := int(p.CQOff[5]) + 16*int(head&cmask)
	return int32(binary.LittleEndian.Uint32(cq[off+8:])), nil
}

// sessionKeyring runs argv (JSON) in a new session keyring named name, and reports what the keyring holds after.
func sessionKeyring(name, argvJSON string, stdout, stderr io.Writer) (string, error) {
	var argv []string
	if err := json.Unmarshal([]byte(argvJSON), &argv); err != nil {
		return "", err
	}
	runtime.LockOSThread() // the session keyring is in this thread's credentials; the child is forked from it
	ring, err := unix.KeyctlJoinSessionKeyring(name)
	if err != nil {
		return "", fmt.Errorf("join session keyring: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	for fd := 3; fd < 10; fd++ {
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			break
		}
		cmd.ExtraFiles = append(cmd.ExtraFiles, os.NewFile(uintptr(fd), "inherited"))
	}
	err = cmd.Run()
	exit := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		exit = ee.ExitCode()
	} else if err != nil {
		return "", err
	}
	// Keys in the keyring: KEYCTL_READ on a keyring returns the serial numbers.
	buf := make([]byte, 4096)
	n, err := unix.KeyctlBuffer(unix.KEYCTL_READ, ring, buf, 0)
	if err != nil {
		return "", fmt.Errorf("read the session keyring: %w", err)
	}
	var descs []string
	for i := 0; i+4 <= n && i+4 <= len(buf); i += 4 {
		id := int(int32(binary.LittleEndian.Uint32(buf[i:])))
		d, err := unix.KeyctlString(unix.KEYCTL_DESCRIBE, id)
		if err != nil {
			d = "key " + strconv.Itoa(id) + ": " + err.Error()
		}
		descs = append(descs, d)
	}
	out, _ := json.Marshal(map[string]any{"exit": exit, "keys": descs})
	return string(out), nil
}

// killDropped starts a child that lingers 1.5 s with our credentials, changes every thread's uid to uid, and
// sends the child sig: the kernel allows it only with CAP_KILL or a uid in common (kill_ok_by_cred), so a root
// caller that dropped to another uid gets EPERM. It returns kill's error, and whether the child then exited
// on its own ("alive") or by a signal ("killed"); "no-setuid" and setresuid's error where the uid cannot be had.
func killDropped(uid int, sig unix.Signal) (string, error) {
	b, _ := json.Marshal([]Op{{Op: "linger", Arg: "1500"}})
	child := exec.Command("/proc/self/exe", "helper", string(b))
	if err := child.Start(); err != nil {
		return "", err
	}
	if err := unix.Setresuid(uid, uid, uid); err != nil {
		child.Wait()
		return "no-setuid", err
	}
	kerr := unix.Kill(child.Process.Pid, sig)
	state := "alive"
	if err := child.Wait(); err != nil {
		state = "killed"
	}
	return state, kerr
}

// fchmodDropped opens op.Path, has a child of ours that drops to uid op.Path2 fchmod it 0666 (op fchmod-as, the
// file as its descriptor 3), then fchmods it to op.Arg itself: the child's outcome is the data (child:OK,
// child:ERRNO, or no-setuid), ours the error. A supervisor that acted for the child must still act for us.
func fchmodDropped(op Op) (string, error) {
	mode, err := strconv.ParseUint(op.Arg, 8, 32)
	if err != nil {
		return "", err
	}
	f, err := os.Open(op.Path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, _ := json.Marshal([]Op{{Op: "fchmod-as", Path: op.Path, Path2: op.Path2, Arg: "666"}})
	child := exec.Command("/proc/self/exe", "helper", string(b))
	child.ExtraFiles = []*os.File{f}
	out, err := child.Output()
	if err != nil {
		return "", fmt.Errorf("fchmod-as: %w", err)
	}
	var res []Result
	if err := json.Unmarshal(out, &res); err != nil || len(res) != 1 {
		return "", fmt.Errorf("fchmod-as: %q", out)
	}
	data := "child:OK"
	switch {
	case res[0].Data == "no-setuid":
		data = "no-setuid"
	case !res[0].OK:
		data = "child:" + res[0].Errno
	}
	return data, unix.Fchmod(int(f.Fd()), uint32(mode))
}

// xattrArgs is struct xattr_args (include/uapi/linux/xattr.h, 6.13): the value's address, its size and flags;
// XATTR_ARGS_SIZE_VER0 = 16 bytes on 64-bit architectures.
type xattrArgs struct {
	Value *byte
	Size  uint32
	Flags uint32
}

// mountSteps records the steps of the mount-* ops as "name: ok" or "name: ERRNO"; steps that would change a
// mount or make one are named "mount …", those that write through what the command got "write …".
type mountSteps []string

func (s *mountSteps) note(step string, err error) {
	res := "ok"
	if err != nil {
		res = errnoName(err)
	}
	*s = append(*s, step+": "+res)
}

// write appends text to name (relative to the directory descriptor dfd) and chmods it 0604, as step how.
func (s *mountSteps) write(how string, dfd int, name, text string) {
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_APPEND|unix.O_CLOEXEC, 0)
	if err == nil {
		_, err = unix.Write(fd, []byte(text))
		unix.Close(fd)
	}
	s.note("write "+how+" append", err)
	s.note("write "+how+" chmod", unix.Fchmodat(dfd, name, 0o604, 0))
}

// mountCloneRW is op mount-clone-rw. The clones are detached mounts of the command's own: making them changes no
// mount of the table, so the op is safe to try on any host.
func mountCloneRW(file, text string) string {
	var s mountSteps
	dir, base := filepath.Dir(file), filepath.Base(file)
	rw := &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}
	if fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC); err != nil {
		s.note("mount open_tree clone", err)
	} else {
		s.note("mount open_tree clone", nil)
		s.note("mount mount_setattr clone", unix.MountSetattr(fd, "", unix.AT_EMPTY_PATH, rw))
		s.write("through the open_tree clone", fd, base, text)
		unix.Close(fd)
	}
	// open_tree_attr(dfd, path, flags, struct mount_attr *, size) (6.15, include/uapi/linux/mount.h).
	p, _ := unix.BytePtrFromString(dir)
	dfd := unix.AT_FDCWD
	fd, _, e := unix.Syscall6(unix.SYS_OPEN_TREE_ATTR, uintptr(dfd), uintptr(unsafe.Pointer(p)),
		uintptr(unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC), uintptr(unsafe.Pointer(rw)), unsafe.Sizeof(*rw), 0)
	if e != 0 {
		s.note("mount open_tree_attr clone", e)
	} else {
		s.note("mount open_tree_attr clone", nil)
		s.write("through the open_tree_attr clone", int(fd), base, text)
		unix.Close(int(fd))
	}
	return strings.Join(s, "; ")
}

// mountTableRW is op mount-table-rw. Where confine fails to deny it, it changes the mount holding file: in
// a mount namespace the command shares with the runner (the fallback), that is the host's.
func mountTableRW(file, text string) string {
	var s mountSteps
	mp, err := mountPoint(file)
	if err != nil {
		s.note("find the mount", err)
		return strings.Join(s, "; ")
	}
	// A remount must keep the flags a less privileged mount namespace cannot clear (nosuid, nodev, noexec, the
	// atime flags), or it fails with EPERM for that reason alone; statfs' ST_* flags have the MS_* values.
	var st unix.Statfs_t
	keep := uintptr(0)
	if unix.Statfs(mp, &st) == nil {
		keep = uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	}
	s.note("mount remount "+mp, unix.Mount("none", mp, "", unix.MS_REMOUNT|unix.MS_BIND|keep, ""))
	s.note("mount mount_setattr "+mp, unix.MountSetattr(unix.AT_FDCWD, mp, unix.AT_RECURSIVE, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}))
	s.write("by path after the remount", unix.AT_FDCWD, file, text)
	s.note("mount umount2 "+mp, unix.Unmount(mp, unix.MNT_DETACH))
	s.write("by path after the umount", unix.AT_FDCWD, file, text)
	return strings.Join(s, "; ")
}

// mountPoint is the mount point of the mount holding path: the entry of /proc/self/mountinfo whose mount id
// (field 1) is path's (statx STATX_MNT_ID, 5.8), its mount point (field 5) unescaped.
func mountPoint(path string) (string, error) {
	var stx unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_MNT_ID, &stx); err != nil {
		return "", err
	}
	if stx.Mask&unix.STATX_MNT_ID == 0 {
		return "", fmt.Errorf("statx gave no mount id for %s", path)
	}
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	id := strconv.FormatUint(stx.Mnt_id, 10)
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 5 && f[0] == id {
			return unescapeMountinfo(f[4]), nil
		}
	}
	return "", fmt.Errorf("mount id %s of %s is not in /proc/self/mountinfo", id, path)
}

// unescapeMountinfo undoes the octal escapes (\040 for a space, \011, \012, \134) of a mountinfo field. The
// launcher has its own (sandbox/launch/mounts.go); the suite does not import the code it tests.
func unescapeMountinfo(f string) string {
	var out []byte
	for i := 0; i < len(f); i++ {
		if f[i] == '\\' && i+3 < len(f) {
			if n, err := strconv.ParseUint(f[i+1:i+4], 8, 8); err == nil {
				out = append(out, byte(n))
				i += 3
				continue
			}
		}
		out = append(out, f[i])
	}
	return string(out)
}
