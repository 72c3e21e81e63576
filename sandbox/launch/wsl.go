package launch

import (
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/report"
)

// WSL is the kind of Windows Subsystem for Linux a kernel belongs to. Its number is the report's "wsl" field.
type WSL int

// The kinds.
const (
	NotWSL WSL = 0 // a Linux kernel outside WSL
	WSL1   WSL = 1 // a translation layer, not a Linux kernel: no Landlock
	WSL2   WSL = 2 // a real Microsoft kernel in a utility VM
)

// DetectWSL returns the kind of release: WSL1's "kernel" reports e.g. "4.4.0-19041-Microsoft", WSL2's e.g.
// "6.6.36.6-microsoft-standard-WSL2". A launcher built with the wsl2 tag treats every non-WSL1 kernel as WSL2.
func DetectWSL(release string) WSL {
	lower := strings.ToLower(release)
	switch {
	case !strings.Contains(lower, "microsoft"):
		if wsl2Build {
			return WSL2
		}
		return NotWSL
	case strings.Contains(lower, "wsl2") || strings.Contains(lower, "microsoft-standard"):
		return WSL2
	case strings.Contains(release, "Microsoft"):
		return WSL1
	}
	return WSL2
}

// Interop is the state of WSL2's Windows interop: the binfmt_misc entry whose interpreter is /init and which
// starts .exe files as Windows processes, outside any Landlock domain.
type Interop string

// The interop states.
const (
	InteropEnabled  Interop = "enabled"
	InteropDisabled Interop = "disabled" // entry present but disabled, or no such entry
	InteropUnknown  Interop = "unknown"  // binfmt_misc is not mounted: an entry could exist unseen
)

// binfmtDir is where binfmt_misc shows its entries (Documentation/admin-guide/binfmt-misc.rst).
var binfmtDir = "/proc/sys/fs/binfmt_misc"

// readWSLInterop reads binfmt_misc for an enabled entry with interpreter /init (WSL registers "WSLInterop",
// sometimes also "WSLInterop-late", with flags PF, so the interpreter is pinned at registration and no
// Landlock rule on /init could stop it).
func readWSLInterop() Interop {
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(binfmtDir, "status"), &st); err != nil {
		return InteropUnknown
	}
	names, _ := dirNames(binfmtDir)
	for _, name := range names {
		if name == "status" || name == "register" {
			continue
		}
		b, err := readFile(filepath.Join(binfmtDir, name))
		if err != nil {
			continue
		}
		text := string(b)
		if strings.HasPrefix(text, "enabled") && strings.Contains(text, "\ninterpreter /init\n") {
			return InteropEnabled
		}
	}
	return InteropDisabled
}

// How confine closes WSL2's Windows interop inside the sandbox (sandbox/README.md, WSL2; sources are
// src/linux/init/{binfmt.cpp,util.cpp,util.h} of github.com/microsoft/WSL):
//
//   - An .exe is started by /init, run by the kernel as the binfmt_misc interpreter of MZ files (or executed
//     directly: `/init x.exe`). It connects to an interop server's unix socket, WSL_INTEROP, or else the
//     first /run/WSL/<pid>_interop of its ancestors (UtilConnectToInteropServer), and asks it to start the
//     process; in WSL2 it also listens on an AF_VSOCK port, to which the Windows side connects the process's
//     standard streams (CreateNtProcessUtilityVm). /run/WSL is made mode 0777 by init (WSL_TEMP_FOLDER).
//   - So the mount layer mounts an empty, read-only tmpfs over /run/WSL (no socket to reach there, none to
//     make), the environment loses WSL_INTEROP, and seccomp denies AF_VSOCK sockets (seccomp.Policy.DenyVsock).
//     A socket reached through another process's root (/proc/PID/root/run/WSL/...) needs ptrace access to
//     that process, which Landlock denies from inside a domain to any process outside it (ptrace_may_access,
//     security/landlock/task.c, ABI 1).
//   - Defence in depth: the Windows drive mounts (9p under /mnt) outside the writable roots
//     are made noexec, so Windows' own programs (cmd.exe, powershell.exe) do not even reach /init in place.
//     A writable root on such a mount stays executable (a worktree under /mnt/c keeps its scripts), and an
//     .exe copied anywhere still reaches /init: the closure rests on the socket and vsock, not on noexec.
//
// Without a mount namespace the sockets cannot be hidden, so confine refuses there (reason wsl2-interop),
// unless --allow-interop leaves interop open.

// interopDir is where WSL's init makes the interop servers' sockets (WSL_TEMP_FOLDER, "/run/WSL"; the socket
// of the process with pid P is <interopDir>/P_interop). A variable only for tests.
var interopDir = "/run/WSL"

// The report's wsl_interop states, on WSL2 only.
const (
	interopStateDisabled = "disabled" // WSL's own setting: no interop entry is enabled in binfmt_misc
	interopStateClosed   = "closed"   // enabled (or unknown) on the host, closed inside the sandbox
	interopStateAllowed  = "allowed"  // enabled (or unknown), and left open by --allow-interop
)

// interopState is the report's wsl_interop for these facts ("" off WSL2) and whether confine must close
// interop in the mount layer (refusing where there is none).
func interopState(f Facts, allow bool) (state string, closeIt bool) {
	switch {
	case f.WSL != WSL2:
		return "", false
	case f.Interop == InteropDisabled:
		return interopStateDisabled, false
	case allow:
		return interopStateAllowed, false
	}
	return interopStateClosed, true
}

// interopWarning is the report's warning for a wsl_interop state, or "": also the how of its wsl-interop
// channel (interopNotes).
func interopWarning(state string) string {
	switch state {
	case interopStateDisabled:
		return "WSL2: interop disabled; WSL_INTEROP removed, AF_VSOCK denied"
	case interopStateClosed:
		return "WSL2: interop closed: " + interopHow
	case interopStateAllowed:
		return "WSL2: --allow-interop: an .exe runs as a Windows process, outside the sandbox"
	}
	return ""
}

// interopHow says how interop is closed, for the warning, the channel and probe.
const interopHow = "empty read-only tmpfs on /run/WSL, WSL_INTEROP removed, AF_VSOCK denied, drives noexec"

// interopRefusal is the refusal where confine cannot close interop: without a mount namespace of its own (why
// says why), or where the layer would be bwrap's, which does not carry the closure.
func interopRefusal(why string) error {
	return report.Refuse(report.WSL2Interop, "WSL2 interop is on and confine cannot hide its sockets here ("+why+
		"): an .exe would run outside the sandbox; let confine build its mount layer (root, or user namespaces "+
		"allowed), set [interop] enabled=false in /etc/wsl.conf, or pass --allow-interop")
}

// interopProbeRefusal starts probe's auto_reason where a run would be refused (interopRefusal), before why.
const interopProbeRefusal = "WSL2 interop is on, and confine refuses (--allow-interop opts out): it cannot hide the interop sockets here: "

// interopBwrap is why bwrap's mount layer cannot close interop.
const interopBwrap = "bwrap's mount layer has no interop closure"

// hideInterop mounts an empty, read-only tmpfs (nosuid, nodev, noexec) over interopDir, by name, in the mount
// namespace of the layer being built (after the writable clones are attached, so that it lands on the mount
// now visible there; move_mount follows no final symlink). A missing interopDir holds no
// socket: nothing is mounted. Errors are the layer's.
func hideInterop() error {
	if unix.Access(interopDir, unix.F_OK) == unix.ENOENT {
		return nil
	}
	mnt, err := mountTmpfs("0555", unix.MOUNT_ATTR_RDONLY|unix.MOUNT_ATTR_NOSUID|unix.MOUNT_ATTR_NODEV|
		unix.MOUNT_ATTR_NOEXEC, unix.AT_FDCWD, interopDir)
	if err != nil {
		return err
	}
	return unix.Close(mnt)
}

// driveFS is the filesystem type of WSL2's Plan 9 drive mounts (V9FS_MAGIC); a variable only for tests, which
// have no 9p drive and use a tmpfs.
var driveFS int64 = unix.V9FS_MAGIC

// drivesDir is where WSL mounts the Windows drives ([automount] root, default /mnt/: /mnt/c, ...). A variable
// only for tests.
var drivesDir = "/mnt"

// noexecDrives makes each Windows drive mount (mount_setattr, 5.12) noexec: every mount directly beneath
// drivesDir whose filesystem is 9p (V9FS_MAGIC, include/uapi/linux/magic.h: WSL2's drvfs), as statfs(2) tells
// it. WSL's own tmpfs mounts there (/mnt/wsl, /mnt/wslg) are left alone, and so are its 9p GPU shares under
// /usr/lib/wsl, whose libraries are mapped executable. Drives mounted with virtiofs (an opt-in of newer WSL)
// are not matched. It runs while the writable roots' clones are still detached, so a writable root on a drive
// keeps exec.
func noexecDrives() error {
	names, _ := dirNames(drivesDir)
	for _, name := range names {
		at := drivesDir + "/" + name
		var st unix.Statfs_t
		if unix.Statfs(at, &st) != nil || st.Type != driveFS {
			continue
		}
		if err := unix.MountSetattr(unix.AT_FDCWD, at, unix.AT_SYMLINK_NOFOLLOW,
			&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOEXEC}); err != nil {
			return msg.Err(at, ": mount_setattr noexec: ", err)
		}
	}
	return nil
}

// interopNotes adds, for a wsl_interop state (WSL2 only: nothing for ""), the wsl-interop channel to ch and
// the warning to w, and returns w.
func interopNotes(state string, ch map[string]report.Channel, w []string) []string {
	if state == "" {
		return w
	}
	how := interopWarning(state)
	if state == interopStateAllowed {
		chans(ch).open("wsl-interop", how)
	} else {
		chans(ch).closed("wsl-interop", how)
	}
	return append(w, how)
}
