package supervisor

import (
	"os"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
)

// Signals (below Landlock ABI 6, 6.12, where LANDLOCK_SCOPE_SIGNAL does not exist): the filter hands every call
// that sends a signal, and every call that names the owner a descriptor's SIGIO and SIGURG go to, to the
// supervisor (seccomp.Policy.SuperviseSignals). The command may signal itself and its descendants, as
// Landlock's scope allows a domain's own processes; any other target is EPERM, as Landlock answers.
//
//   - To itself (the caller's own thread group): the call is resumed unchanged
//     (SECCOMP_USER_NOTIF_FLAG_CONTINUE, 5.5), which is sound because the decision reads only register
//     arguments and the caller's own identity, which cannot change while it waits; the kernel then checks
//     what it reads from memory (a siginfo) as for any call.
//   - To another process: the supervisor opens a pidfd on it (pidfd_open, 5.3; PIDFD_THREAD, 6.9, for a
//     thread), checks that it descends from the supervisor (descends: the PPid chain in /proc, each link
//     re-read), and sends the signal through that pidfd (pidfd_send_signal, 5.1). A pidfd names one process
//     for good: had it ended before the send, and its number gone to another, the send fails with ESRCH, so
//     what was read in /proc was the target's own. The supervisor is a child subreaper
//     (PR_SET_CHILD_SUBREAPER, set by its launcher), so an orphan of the command stays its descendant.
//   - To a group (kill 0, -PGRP, -1): each member is found by scanning /proc, and each descendant signalled
//     as above; the others are skipped. Success if one was signalled, else EPERM if an outsider matched, else
//     ESRCH (kill(-1) of the kernel counts a process it may not signal as a success).
//   - pidfd_send_signal: the command's pidfd is taken (pidfd_getfd, 5.6; where it is refused, the process is
//     named by the command's /proc/TID/fdinfo/N and opened again), and its process checked as above.
//     PIDFD_SIGNAL_PROCESS_GROUP (6.9) and a /proc/PID directory descriptor are EPERM.
//   - A descriptor's owner (fcntl F_SETOWN, F_SETOWN_EX; ioctl FIOSETOWN, SIOCSPGRP): only the caller's own
//     process or thread, or none, is allowed; a signal to it comes later, when no check made now holds for
//     another process, and a process group can gain members after any check. F_SETOWN takes only registers
//     and is resumed; the others read their owner from memory, so the supervisor sets it itself, on the
//     command's open file (pidfd_getfd), with what it read.
//   - A caller in a PID namespace other than the supervisor's names its targets there, and a namespace it
//     joined (setns) may hold processes of others: only the caller itself is allowed to it.
//
// A signal the supervisor sends carries the supervisor's PID and UID in its siginfo (SI_USER), not the
// command's. Signal 0 is not supervised: it sends nothing.

// signalNr says whether a notification is one of the signal calls (which the filter notifies only with
// SuperviseSignals).
func signalNr(nr int32) bool {
	switch uint32(nr) {
	case unix.SYS_KILL, unix.SYS_TKILL, unix.SYS_TGKILL, unix.SYS_RT_SIGQUEUEINFO, unix.SYS_RT_TGSIGQUEUEINFO,
		unix.SYS_PIDFD_SEND_SIGNAL, unix.SYS_FCNTL, unix.SYS_IOCTL:
		return true
	}
	return false
}

// A caller is the thread a signal notification came from, as /proc/TID/status tells it.
type caller struct {
	tid, tgid int
	nested    bool // in a PID namespace other than ours (NSpid has more than one number)
	nsTid     int  // its thread ID and thread group ID in its own namespace (the last of NSpid, NStgid)
	nsTgid    int
	creds     creds // its credentials, which the kernel weighs when it sends (kill_ok_by_cred)
}

// self says whether pid (in the caller's namespace) is the caller's own thread group or thread.
func (c caller) self(pid int) bool {
	if c.nested {
		return pid == c.nsTgid || pid == c.nsTid
	}
	return pid == c.tgid || pid == c.tid
}

// signal answers a signal notification: errno, or resume (continue) the call unchanged.
func (s *Supervisor) signal(n *notif) (errno unix.Errno, resume bool) {
	c, err := callerOf(int(n.Pid))
	if err != nil {
		return unix.EPERM, false
	}
	c.creds = s.inNS(c.tid, c.creds)
	if !s.live(n.ID) { // what /proc said of the caller is the caller's only while it waits
		return unix.EPERM, false
	}
	a := n.Args
	i32 := func(i int) int { return int(int32(a[i])) }
	switch uint32(n.Nr) {
	case unix.SYS_KILL:
		return s.kill(c, i32(0), i32(1))
	case unix.SYS_RT_SIGQUEUEINFO:
		if c.self(i32(0)) {
			return 0, true
		}
		if c.nested || i32(0) <= 0 {
			return nestedOr(c, unix.ESRCH), false
		}
		info, errno := s.siginfo(n, a[2], i32(1))
		if errno != 0 {
			return errno, false
		}
		return s.toProcess(c, i32(0), i32(1), info), false
	case unix.SYS_TKILL:
		if i32(0) <= 0 {
			return unix.EINVAL, false
		}
		return s.toThread(c, 0, i32(0), i32(1), nil)
	case unix.SYS_TGKILL:
		if i32(0) <= 0 || i32(1) <= 0 {
			return unix.EINVAL, false
		}
		return s.toThread(c, i32(0), i32(1), i32(2), nil)
	case unix.SYS_RT_TGSIGQUEUEINFO:
		if i32(0) <= 0 || i32(1) <= 0 {
			return unix.EINVAL, false
		}
		if c.self(i32(0)) {
			return 0, true
		}
		info, errno := s.siginfo(n, a[3], i32(2))
		if errno != 0 {
			return errno, false
		}
		return s.toThread(c, i32(0), i32(1), i32(2), info)
	case unix.SYS_PIDFD_SEND_SIGNAL:
		return s.pidfdSend(n, c), false
	case unix.SYS_FCNTL:
		return s.owner(n, c)
	case unix.SYS_IOCTL:
		return s.owner(n, c)
	}
	return unix.ENOSYS, false
}

// nestedOr is EPERM for a caller in another PID namespace, else errno.
func nestedOr(c caller, errno unix.Errno) unix.Errno {
	if c.nested {
		return unix.EPERM
	}
	return errno
}

// kill is kill(pid, sig) (kernel/signal.c, kill_something_info).
func (s *Supervisor) kill(c caller, pid, sig int) (unix.Errno, bool) {
	switch {
	case c.self(pid):
		return 0, true
	case c.nested:
		return unix.EPERM, false
	case pid > 0:
		return s.toProcess(c, pid, sig, nil), false
	case pid == -1:
		return s.toGroup(c, -1, sig), false
	case pid == 0:
		pgrp, err := pgrpOf(c.tid)
		if err != nil {
			return unix.EPERM, false
		}
		return s.toGroup(c, pgrp, sig), false
	case pid == -pid: // INT_MIN: the kernel answers ESRCH
		return unix.ESRCH, false
	}
	return s.toGroup(c, -pid, sig), false
}

// toProcess sends sig for c (with info, or as SI_USER when nil) to the process pid, a thread group's ID or any of its
// threads' (kill(2) of a thread signals its whole group), if it is a descendant: 0, EPERM, ESRCH or the send's
// error.
func (s *Supervisor) toProcess(c caller, pid, sig int, info *unix.Siginfo) unix.Errno {
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err == unix.EINVAL { // a thread other than its group's leader (before 6.9, with no PIDFD_THREAD asked)
		tgid, _, terr := tgidOf(pid)
		if terr != nil {
			return unix.ESRCH
		}
		pidfd, err = unix.PidfdOpen(tgid, 0)
		pid = tgid
	}
	if err != nil {
		return pidfdErr(err)
	}
	defer unix.Close(pidfd)
	if !descends(pid, s.self, parentOf) {
		return unix.EPERM
	}
	return s.sendAs(c, pidfd, sig, info, 0)
}

// toThread sends sig to thread tid, of thread group tgid (0: any, as tkill), if that group descends from the
// supervisor or is the caller's. A thread is signalled through a PIDFD_THREAD pidfd (6.9). Before it, a
// group's leader is signalled through its pidfd (the signal is then the group's, not the thread's), another
// of the caller's threads by tgkill on the caller's group (pinned by the waiting caller; the kernel checks
// that the thread is one of it), and another process's other threads not at all (EPERM).
func (s *Supervisor) toThread(c caller, tgid, tid, sig int, info *unix.Siginfo) (unix.Errno, bool) {
	if c.self(tgid) || (tgid == 0 && c.self(tid)) {
		return 0, true // the kernel checks that tid is one of ours
	}
	if c.nested {
		return unix.EPERM, false
	}
	flags := 0
	if s.pidfdFlags != 0 {
		flags = unix.PIDFD_THREAD
	}
	pidfd, err := unix.PidfdOpen(tid, flags)
	if err == unix.EINVAL && flags != 0 { // before 6.9
		s.pidfdFlags = 0
		pidfd, err = unix.PidfdOpen(tid, 0)
	}
	if err == unix.EINVAL { // before 6.9, and tid is no group's leader
		if group, _, err := tgidOf(tid); err == nil && group == c.tgid && info == nil {
			return errnoOf(unix.Tgkill(c.tgid, tid, unix.Signal(sig)), unix.EPERM), false
		}
		return unix.EPERM, false
	}
	if err != nil {
		return pidfdErr(err), false
	}
	defer unix.Close(pidfd)
	group, _, err := tgidOf(tid)
	switch {
	case err != nil:
		return unix.ESRCH, false
	case tgid != 0 && group != tgid:
		return unix.ESRCH, false // as tgkill answers for a thread of another group
	case group != c.tgid && !descends(group, s.self, parentOf):
		return unix.EPERM, false
	}
	return s.sendAs(c, pidfd, sig, info, 0), false
}

// maxPasses bounds the scans of a group signal: a member forked while the group was being signalled is met by
// the next scan, as the kernel's signal reaches it under its lock.
const maxPasses = 3

// toGroup sends sig to every descendant in process group pgrp, or (pgrp -1) to every descendant but the
// caller's own thread group (kill(-1) spares the caller).
func (s *Supervisor) toGroup(c caller, pgrp, sig int) unix.Errno {
	done := map[int]bool{}
	signalled, outsider := false, false
	last := unix.ESRCH
	for pass := 0; pass < maxPasses; pass++ {
		procs, err := scanProc()
		if err != nil {
			return unix.EPERM
		}
		more := false
		for pid, p := range procs {
			if done[pid] || (pgrp == -1 && (pid == c.tgid || pid <= 1)) || (pgrp != -1 && p.pgrp != pgrp) {
				continue
			}
			if !descendsIn(pid, s.self, procs) {
				outsider = true
				continue
			}
			done[pid], more = true, true
			errno := s.toProcess(c, pid, sig, nil)
			switch errno {
			case 0:
				signalled = true
			case unix.EPERM: // an outsider after all (the scan was out of date)
				outsider = true
			default:
				last = errno
			}
		}
		if !more {
			break
		}
	}
	switch {
	case signalled:
		return 0
	case outsider:
		return unix.EPERM
	}
	return last
}

// pidfdSend is pidfd_send_signal(fd, sig, info, flags) on the command's descriptor fd.
func (s *Supervisor) pidfdSend(n *notif, c caller) unix.Errno {
	fd, sig, flags := int(int32(n.Args[0])), int(int32(n.Args[1])), uint32(n.Args[3])
	if flags&^(unix.PIDFD_SIGNAL_THREAD|unix.PIDFD_SIGNAL_THREAD_GROUP) != 0 {
		if flags&unix.PIDFD_SIGNAL_PROCESS_GROUP != 0 {
			return unix.EPERM // a group can hold processes of others
		}
		return unix.EINVAL
	}
	var info *unix.Siginfo
	if n.Args[2] != 0 {
		var errno unix.Errno
		if info, errno = s.siginfo(n, n.Args[2], sig); errno != 0 {
			return errno
		}
	}
	pidfd, err := s.takePidfd(c.tid, fd)
	if err != nil {
		return errnoOf(err, unix.EPERM)
	}
	defer unix.Close(pidfd)
	pid, err := fdinfoPid("/proc/self/fdinfo/" + msg.Itoa(pidfd))
	if err != nil {
		return errnoOf(err, unix.EPERM)
	}
	tgid, _, err := tgidOf(pid) // a PIDFD_THREAD pidfd's Pid is its thread's
	if err != nil {
		return unix.ESRCH
	}
	if tgid != c.tgid && !descends(tgid, s.self, parentOf) {
		return unix.EPERM
	}
	return s.sendAs(c, pidfd, sig, info, int(flags))
}

// takePidfd is our own pidfd of the process the command's descriptor fd names: the command's open file
// (pidfd_getfd), or where that is refused (Docker's default seccomp profile refuses it without
// CAP_SYS_PTRACE), a pidfd we open on the PID the command's /proc/TID/fdinfo/FD reports (its Pid line; the
// number then is checked, and the send through our pidfd confirms it). Not a pidfd: EPERM.
func (s *Supervisor) takePidfd(tid, fd int) (int, error) {
	if got, err := s.commandFile(tid, fd); err == nil {
		return got, nil
	} else if err == unix.EBADF {
		return -1, err
	}
	path := procPath(tid, "fdinfo/"+msg.Itoa(fd))
	pid, err := fdinfoPid(path)
	if err != nil {
		return -1, err
	}
	b, err := os.ReadFile(path)
	flags := 0
	if err == nil && fdinfoFlags(string(b))&unix.O_EXCL != 0 { // PIDFD_THREAD is O_EXCL (include/uapi/linux/pidfd.h)
		flags = unix.PIDFD_THREAD
	}
	got, err := unix.PidfdOpen(pid, flags)
	if err != nil {
		return -1, pidfdErr(err)
	}
	return got, nil
}

// commandFile is pidfd_getfd(2) (5.6) of the descriptor fd of the calling thread tid, on a pidfd of tid that
// is kept for the next call (pidfd_open costs as much as the rest; PIDFD_THREAD from 6.9, so that a thread that
// unshared its descriptor table is answered from its own; before, a thread-group leader's). ENOSYS (never
// tried again), EPERM and the like mean it cannot be had; EBADF that fd is not open.
func (s *Supervisor) commandFile(tid, fd int) (int, error) {
	if !s.getfd {
		return -1, unix.ENOSYS
	}
	if s.pidfdOf != tid {
		unix.Close(s.pidfd)
		pidfd, err := unix.PidfdOpen(tid, s.pidfdFlags)
		if err == unix.EINVAL && s.pidfdFlags != 0 {
			s.pidfdFlags = 0
			pidfd, err = unix.PidfdOpen(tid, 0)
		}
		s.pidfd, s.pidfdOf = pidfd, tid
	}
	got, err := unix.PidfdGetfd(s.pidfd, fd, 0)
	switch err {
	case nil:
		return got, nil
	case unix.ENOSYS:
		s.getfd = false
	case unix.ESRCH: // the kept pidfd's thread has ended: tid is another's now, opened again next time
		s.pidfdOf = 0
	}
	return -1, err
}

// The owner types of struct f_owner_ex (include/uapi/asm-generic/fcntl.h; x/sys has no names for them):
// F_OWNER_TID, F_OWNER_PID (F_OWNER_PGRP is 2).
const (
	fOwnerTID = 0
	fOwnerPID = 1
)

// owner answers fcntl(F_SETOWN, F_SETOWN_EX) and ioctl(FIOSETOWN, SIOCSPGRP): only none (0) or the caller's own
// process or thread may be a descriptor's owner.
func (s *Supervisor) owner(n *notif, c caller) (unix.Errno, bool) {
	fd, cmd := int(int32(n.Args[0])), uint32(n.Args[1])
	if uint32(n.Nr) == unix.SYS_FCNTL && cmd == unix.F_SETOWN {
		who := int(int32(n.Args[2]))
		if who == 0 || c.self(who) {
			return 0, true
		}
		return unix.EPERM, false
	}
	if c.nested {
		return unix.EPERM, false
	}
	var buf [8]byte // struct f_owner_ex {int type; pid_t pid;}, or the ioctls' int
	size := 4
	if uint32(n.Nr) == unix.SYS_FCNTL {
		size = 8
	}
	if errno := readMem(int(n.Pid), n.Args[2], buf[:size]); errno != 0 {
		return errno, false
	}
	if !s.live(n.ID) {
		return unix.EPERM, false
	}
	who := int(*(*int32)(unsafe.Pointer(&buf[0])))
	if size == 8 {
		typ := who
		who = int(*(*int32)(unsafe.Pointer(&buf[4])))
		if typ != fOwnerTID && typ != fOwnerPID && who != 0 {
			return unix.EPERM, false // F_OWNER_PGRP, or a type the kernel answers EINVAL for
		}
	}
	if who != 0 && !c.self(who) {
		return unix.EPERM, false
	}
	file, err := s.commandFile(c.tid, fd)
	if err != nil {
		return errnoOf(err, unix.EPERM), false
	}
	defer unix.Close(file)
	// The command's own call (fcntl or ioctl), on its open file, with the owner we read.
	_, _, e := unix.Syscall(uintptr(uint32(n.Nr)), uintptr(file), uintptr(cmd), uintptr(unsafe.Pointer(&buf[0])))
	return e, false
}

// siginfo reads the command's siginfo_t (128 bytes, include/uapi/asm-generic/siginfo.h) at addr for signal sig.
// Its si_signo is set to sig, as rt_sigqueueinfo takes the signal from its argument; its si_code is checked
// by the kernel again when the supervisor sends it (a negative code only, to another process).
func (s *Supervisor) siginfo(n *notif, addr uint64, sig int) (*unix.Siginfo, unix.Errno) {
	var info unix.Siginfo
	if errno := readMem(int(n.Pid), addr, unsafe.Slice((*byte)(unsafe.Pointer(&info)), unsafe.Sizeof(info))); errno != 0 {
		return nil, errno
	}
	if !s.live(n.ID) {
		return nil, unix.EPERM
	}
	info.Signo = int32(sig)
	return &info, 0
}

// send is pidfd_send_signal(2) (5.1).
func send(pidfd, sig int, info *unix.Siginfo, flags int) unix.Errno {
	return errnoOf(unix.PidfdSendSignal(pidfd, unix.Signal(sig), info, flags), unix.EPERM)
}

// sendAs is send with the caller c's credentials (creds.go: the kernel checks the sender's, which are ours;
// kernel/signal.c, check_kill_permission). One difference stays where they are taken on: a SIGCONT is allowed
// within the sender's session, which is confine's, not the caller's.
func (s *Supervisor) sendAs(c caller, pidfd, sig int, info *unix.Siginfo, flags int) unix.Errno {
	return s.asCaller(c.creds, func() unix.Errno { return send(pidfd, sig, info, flags) })
}

// pidfdErr is the errno for a pidfd_open that failed: ESRCH for no such process, EPERM for anything else (a
// host filter that refuses it): the signal is not sent.
func pidfdErr(err error) unix.Errno {
	if err == unix.ESRCH {
		return unix.ESRCH
	}
	return unix.EPERM
}

// callerOf reads the calling thread's IDs and credentials from /proc/TID/status (its capabilities as it holds
// them in its own user namespace: signal takes them to ours, inNS).
func callerOf(tid int) (caller, error) {
	b, err := os.ReadFile(procPath(tid, "status"))
	if err != nil {
		return caller{}, err
	}
	c := caller{tid: tid}
	for _, line := range strings.Split(string(b), "\n") {
		key, val, _ := strings.Cut(line, ":")
		f := strings.Fields(val)
		switch {
		case key == "Tgid" && len(f) == 1:
			c.tgid, _ = strconv.Atoi(f[0])
		case key == "NSpid" && len(f) > 0:
			c.nested = len(f) > 1
			c.nsTid, _ = strconv.Atoi(f[len(f)-1])
		case key == "NStgid" && len(f) > 0:
			c.nsTgid, _ = strconv.Atoi(f[len(f)-1])
		}
	}
	var ok bool
	if c.creds, ok = parseCreds(string(b)); c.tgid <= 0 || !ok {
		return caller{}, unix.ESRCH
	}
	return c, nil
}

// tgidOf is the thread group of thread tid (/proc/TID/status, Tgid), and its parent's PID (PPid).
func tgidOf(tid int) (tgid, ppid int, err error) {
	b, err := os.ReadFile(procPath(tid, "status"))
	if err != nil {
		return 0, 0, err
	}
	tgid, ppid = -1, -1
	for _, line := range strings.Split(string(b), "\n") {
		key, val, _ := strings.Cut(line, ":")
		switch key {
		case "Tgid":
			tgid, _ = strconv.Atoi(strings.TrimSpace(val))
		case "PPid":
			ppid, _ = strconv.Atoi(strings.TrimSpace(val))
		}
	}
	if tgid <= 0 {
		return 0, 0, unix.ESRCH
	}
	return tgid, ppid, nil
}

// A proc is what the supervisor reads of a process from /proc/PID/stat (proc_pid_stat(5)).
type proc struct{ ppid, pgrp int }

// statOf reads the parent and the process group of pid from /proc/PID/stat: the fields after the command
// name, which ends at the last ')'.
func statOf(pid int) (proc, error) {
	var buf [512]byte
	fd, err := unix.Open(procPath(pid, "stat"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return proc{}, err
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil {
		return proc{}, err
	}
	line := string(buf[:max(n, 0)])
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return proc{}, unix.ESRCH
	}
	f := strings.Fields(line[i+1:]) // state ppid pgrp session ...
	if len(f) < 3 {
		return proc{}, unix.ESRCH
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgrp, err2 := strconv.Atoi(f[2])
	if err1 != nil || err2 != nil {
		return proc{}, unix.ESRCH
	}
	return proc{ppid: ppid, pgrp: pgrp}, nil
}

// parentOf is pid's parent's PID.
func parentOf(pid int) (int, error) {
	p, err := statOf(pid)
	return p.ppid, err
}

// pgrpOf is pid's process group.
func pgrpOf(pid int) (int, error) {
	p, err := statOf(pid)
	return p.pgrp, err
}

// ChildrenOf lists the processes whose parent is pid, from one scan of /proc (scanProc); none where /proc
// cannot be read.
func ChildrenOf(pid int) []int {
	procs, _ := scanProc()
	var kids []int
	for p, q := range procs {
		if q.ppid == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// scanProc reads every process's parent and group (/proc/PID/stat); a process gone meanwhile is left out.
func scanProc() (map[int]proc, error) {
	d, err := os.Open("/proc")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	out := make(map[int]proc, len(names))
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid <= 0 {
			continue
		}
		if p, err := statOf(pid); err == nil {
			out[pid] = p
		}
	}
	return out, nil
}

// descends says whether pid descends from root (a child, a grandchild, ...; not root itself), reading each
// process's parent with parent. The chain is followed up to root, or to a process with no parent in our
// namespace (PPid 0: init, kthreadd) or a parent that can no longer be read. Each link is checked again after
// its parent was read: a parent that ended meanwhile, and whose number went to another process, would have
// had its children handed to a subreaper or init first (exit_notify, before the number is freed), so a child
// whose PPid is unchanged after its parent was read had that parent, alive, while it was read. pid itself
// must be pinned by the caller (a pidfd whose send confirms it was alive).
func descends(pid, root int, parent func(int) (int, error)) bool {
	child := pid
	ppid, err := parent(child)
	if err != nil {
		return false
	}
	for depth := 0; depth < maxDepth; depth++ {
		if ppid == root {
			return true
		}
		if ppid <= 0 || child == root {
			return false
		}
		up, err := parent(ppid)
		if err != nil {
			return false
		}
		if again, err := parent(child); err != nil || again != ppid {
			return false
		}
		child, ppid = ppid, up
	}
	return false
}

// descendsIn is descends over a scan's snapshot, to tell a group's members apart before each is checked for
// real: a snapshot is never the reason to send.
func descendsIn(pid, root int, procs map[int]proc) bool {
	return descends(pid, root, func(p int) (int, error) {
		if q, ok := procs[p]; ok {
			return q.ppid, nil
		}
		return 0, unix.ESRCH
	})
}

// fdinfoPid reads the Pid line of a pidfd's fdinfo (kernel/pid.c, pidfd_show_fdinfo, 5.4): -1 once its
// process has ended (ESRCH), 0 where it is in no namespace of ours (EPERM). A descriptor with no Pid line
// is no pidfd (EPERM: a /proc/PID directory, which the kernel also takes, is not followed).
func fdinfoPid(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if err2, ok := err.(*os.PathError); ok && err2.Err == unix.ENOENT {
			return 0, unix.EBADF
		}
		return 0, unix.EPERM
	}
	for _, line := range strings.Split(string(b), "\n") {
		if val, ok := strings.CutPrefix(line, "Pid:"); ok {
			pid, err := strconv.Atoi(strings.TrimSpace(val))
			switch {
			case err != nil:
				return 0, unix.EPERM
			case pid < 0:
				return 0, unix.ESRCH
			case pid == 0:
				return 0, unix.EPERM
			}
			return pid, nil
		}
	}
	return 0, unix.EPERM
}

// fdinfoFlags is the flags line of an fdinfo (octal).
func fdinfoFlags(info string) int {
	for _, line := range strings.Split(info, "\n") {
		if val, ok := strings.CutPrefix(line, "flags:"); ok {
			f, _ := strconv.ParseInt(strings.TrimSpace(val), 8, 64)
			return int(f)
		}
	}
	return 0
}
