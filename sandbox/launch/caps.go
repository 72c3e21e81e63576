package launch

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/seccomp"
)

// rootCaps are the capabilities a root command keeps (include/uapi/linux/capability.h), each because root's
// ordinary work in its worktree needs it, and Landlock, the mount layer and seccomp still bound where it acts:
//   - CHOWN, DAC_OVERRIDE, FOWNER: package managers and builds running as root own and rewrite files of any
//     owner and mode in the worktree;
//   - SETUID, SETGID: dropping to another user (npm's and apt's unprivileged helpers, su, setpriv);
//   - NET_BIND_SERVICE: a development server on a port below 1024;
//   - SYS_CHROOT: build tools that chroot into a tree in the worktree (the domain and filter follow them).
//
// Everything else goes, among them: SYS_ADMIN (mounts, namespaces), SYS_MODULE, SYS_RAWIO, DAC_READ_SEARCH
// (open_by_handle_at), BPF, SYS_PTRACE, KILL (signals to other users), MKNOD, SETPCAP, SETFCAP (file
// capabilities), FSETID (a set-ID bit that survives a write or a chown), SYS_RESOURCE (which would lift the core
// dump limit), AUDIT_WRITE (messages in the host's audit log), NET_RAW (forged packets), NET_ADMIN, SYS_TIME
// and SYS_BOOT.
var rootCaps = map[uintptr]string{
	unix.CAP_CHOWN: "CHOWN", unix.CAP_DAC_OVERRIDE: "DAC_OVERRIDE", unix.CAP_FOWNER: "FOWNER",
	unix.CAP_SETGID: "SETGID", unix.CAP_SETUID: "SETUID", unix.CAP_NET_BIND_SERVICE: "NET_BIND_SERVICE",
	unix.CAP_SYS_CHROOT: "SYS_CHROOT",
}

// isolate gives the process what it must not share with its caller before execve: a new anonymous session
// keyring (keyctl(KEYCTL_JOIN_SESSION_KEYRING, NULL), 2.6.10; the seccomp filter keeps key writes inside it),
// and a core-dump limit of 1 byte, soft and hard (RLIMIT_CORE): fs/coredump.c writes no core file below a page
// and treats a limit of 1 as "no dump" for a core_pattern pipe, whose helper would otherwise run as root
// outside the sandbox with the command's memory. Without CAP_SYS_RESOURCE the command cannot raise it. A
// Where keyctl fails (EPERM or EACCES: a host profile such as Docker's default denies it; ENOSYS: a kernel
// without keys, or a filter that says so while add_key still works, as the attack review showed), the command
// would keep the caller's session keyring, so a second filter denies every keyring call (seccomp.NoKeyrings);
// no_new_privs is set by then (landlock.Restrict).
func isolate() error {
	_, _, e := unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)
	switch e {
	case 0:
	case unix.ENOSYS, unix.EPERM, unix.EACCES: // no keys, or a host filter: add_key may still be allowed
		prog, err := seccomp.NoKeyrings()
		if err == nil {
			err = seccomp.Install(prog)
		}
		if err != nil {
			return msg.Err("keyctl(KEYCTL_JOIN_SESSION_KEYRING): ", e, ", and denying keyring calls instead: ", err)
		}
	default:
		return msg.Err("keyctl(KEYCTL_JOIN_SESSION_KEYRING): ", e)
	}
	if err := unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{Cur: 1, Max: 1}); err != nil {
		return msg.Err("setrlimit(RLIMIT_CORE, 1): ", err)
	}
	return nil
}

// limitRootCaps cuts the bounding and inheritable sets to rootCaps and clears the ambient set. At execve a
// root process's permitted set becomes (inheritable | bounding), so after this the command has rootCaps at most.
// It needs CAP_SETPCAP, which root has, unless the bounding set is already that small.
func limitRootCaps() error {
	last := unix.CAP_LAST_CAP
	if b, err := readFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	var keep [2]uint32
	for c := 0; c <= last; c++ {
		if _, ok := rootCaps[uintptr(c)]; ok {
			keep[c/32] |= 1 << (c % 32)
			continue
		}
		// A capability already out of the bounding set (a confine inside confine, which has no CAP_SETPCAP to
		// drop anything with) needs no drop: DROP fails there, and READ says so (both 2.6.25). Asked only when
		// DROP fails, READ costs the usual launch no system call.
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if in, rerr := unix.PrctlRetInt(unix.PR_CAPBSET_READ, uintptr(c), 0, 0, 0); rerr == nil && in == 0 {
				continue
			}
			return msg.Err("prctl(PR_CAPBSET_DROP, ", c, "): ", err)
		}
	}
	return trimInheritable(keep)
}

// trimInheritable cuts the inheritable set to keep (two 32-bit words, capability.h's _LINUX_CAPABILITY_U32S_3)
// and clears the ambient set, so nothing beyond keep can reach the command through execve.
func trimInheritable(keep [2]uint32) error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return msg.Err("capget: ", err)
	}
	for i := range data {
		data[i].Inheritable &= keep[i]
	}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return msg.Err("capset: ", err)
	}
	return unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
}

// rootCapNames lists rootCaps for the report.
func rootCapNames() string {
	var names []string
	for c := uintptr(0); c <= unix.CAP_LAST_CAP; c++ {
		if n, ok := rootCaps[c]; ok {
			names = append(names, n)
		}
	}
	return strings.Join(names, " ")
}
