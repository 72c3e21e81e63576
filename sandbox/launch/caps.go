package launch

import (
	"github.com/confine-dev/confine/sandbox/internal/msg"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// rootCaps are the capabilities a root command keeps (include/uapi/linux/capability.h): file ownership and
// permission overrides, identity changes and a few network ones, as in a container runtime's default set, less
// CAP_KILL, CAP_MKNOD, CAP_SETPCAP and CAP_SETFCAP. Everything that reaches past the filesystem boundary goes:
// CAP_SYS_ADMIN (mounts, namespaces), CAP_SYS_MODULE, CAP_SYS_RAWIO, CAP_DAC_READ_SEARCH (open_by_handle_at),
// CAP_BPF, CAP_SYS_PTRACE, CAP_SYS_BOOT, CAP_SYS_TIME and the rest.
var rootCaps = map[uintptr]string{
	unix.CAP_CHOWN: "CHOWN", unix.CAP_DAC_OVERRIDE: "DAC_OVERRIDE", unix.CAP_FOWNER: "FOWNER",
	unix.CAP_FSETID: "FSETID", unix.CAP_SETGID: "SETGID", unix.CAP_SETUID: "SETUID",
	unix.CAP_NET_BIND_SERVICE: "NET_BIND_SERVICE", unix.CAP_NET_RAW: "NET_RAW", unix.CAP_SYS_CHROOT: "SYS_CHROOT",
	unix.CAP_AUDIT_WRITE: "AUDIT_WRITE",
}

// limitRootCaps cuts the bounding and inheritable sets to rootCaps and clears the ambient set. At execve a
// root process's permitted set becomes (inheritable | bounding), so after this the command has rootCaps at most.
// It needs CAP_SETPCAP, which root has.
func limitRootCaps() error {
	last := unix.CAP_LAST_CAP
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
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
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
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
