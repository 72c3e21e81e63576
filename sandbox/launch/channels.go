package launch

import (
	"strings"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/landlock"
	"github.com/confine-dev/confine/sandbox/report"
)

// channels says, for each way a command could act outside its sandbox other than by writing a file, whether
// this launch closes it and how. The names are stable; sandbox/README.md's threat model explains each.
// abi is the kernel's Landlock ABI, metadata the mechanism in use, root whether the command runs as root,
// tty whether --tty was given, pidNS whether the command has a PID namespace of its own, and strict whether
// --strict was given (which denies advisory locks too).
func channels(abi int, metadata Metadata, root, tty, pidNS, strict bool) map[string]report.Channel {
	layer := metadata == MetadataMountLayer
	ch := chans{}
	ch.closed("stdio", "descriptors 0 to 2 are the caller's: the command may change only the files the caller "+
		"named there (a directory there is refused); every other inherited descriptor is closed on exec")
	ch.closed("keyring", "a new session keyring (where the host denies keyctl, no keyring call at all); seccomp lets keys be added only to the command's own thread, "+
		"process and session keyrings, and denies linking keys into them, request_key and operations on keys by serial")
	ch.closed("core-dump", "RLIMIT_CORE is 1 byte, soft and hard: no core file and no core_pattern pipe")
	if strict {
		ch.closed("locks", "--strict: seccomp denies flock and fcntl locks, and leases")
	} else {
		ch.open("locks", "an advisory lock (flock, a POSIX read lock) on a file outside can be taken through a "+
			"read-only descriptor, stalling the caller's processes that lock it too; leases are denied; --strict denies locks")
	}
	if layer {
		ch.closed("ipc", "a private IPC namespace (System V IPC, POSIX message queues)")
		ch.closed("metadata", "read-only mount layer: metadata changes fail outside the writable roots")
		ch.closed("atime", "read-only mounts do not update access times")
	} else {
		ch.closed("ipc", "seccomp denies System V IPC and POSIX message queues (no IPC namespace)")
		ch.closed("metadata", "seccomp denies metadata changes everywhere, inside the writable roots too")
		if metadata == MetadataSupervisor {
			ch.closed("metadata", "supervisor: confine makes each chmod, chown, utimes and xattr change itself, "+
				"on the file it resolved and checked, beneath the writable roots only (EPERM elsewhere); inode flags "+
				"are denied everywhere")
		}
		ch.open("atime", "no mount layer: reading a file outside may update its access time (relatime)")
	}
	switch {
	case abi == 0: // the bwrap backend
		ch.closed("shm", "bwrap's own /dev/shm, in its private /dev: POSIX shared memory and semaphores work, and "+
			"are the sandbox's own")
	case layer:
		ch.closed("shm", "a private tmpfs on /dev/shm (where the host has one): POSIX shared memory and semaphores "+
			"work, and are the sandbox's own")
	default:
		ch.open("shm", "no mount layer, so no private /dev/shm: the host's is writable, as /tmp is, so that POSIX "+
			"shared memory and semaphores work; the command can read, change or remove the shm objects and "+
			"semaphores of the caller's other processes there (as root, of every user's)")
	}
	switch {
	case abi == 0: // the bwrap backend
		ch.closed("device-nodes", "bwrap binds each writable directory without device access (--bind, not "+
			"--dev-bind): a device node inside cannot be opened")
	case layer:
		ch.closed("device-nodes", "the mount layer's writable clones are nodev: a device node inside a writable "+
			"root cannot be opened")
	default:
		ch.open("device-nodes", "no mount layer, so no nodev mount: a device node already inside a writable root "+
			"(made by root before the launch; the command can make none) can be opened, and writing it reaches what "+
			"it stands for, such as a disk or a loop device's backing file")
	}
	ch.closed("setuid", "seccomp denies set-user-ID and set-group-ID modes (openat2 and io_uring: ENOSYS); "+
		"no file capability can be set (root has no CAP_SETFCAP; a user's would hold in its own user namespace only)")
	if root {
		ch.closed("caps", "root keeps only "+rootCapNames())
	} else {
		ch.closed("caps", "not root: no capability outside the command's own user namespace")
	}
	// Without --tty the ioctls that act on a terminal for everyone who uses it are denied (seccomp.Policy's
	// TerminalControl); --tty asks for an interactive command.
	const denied = "; TIOCSTI and TIOCLINUX are denied, and TIOCSWINSZ, TIOCSPGRP, TIOCSETD, TIOCEXCL and TCXONC " +
		"(no SIGWINCH to the caller's foreground group, no taking its foreground, no line discipline, exclusive " +
		"mode or stopped output left on its terminal)"
	const jobControl = "; TIOCSTI and TIOCLINUX are denied; TIOCSWINSZ, TIOCSPGRP, TIOCSETD, TIOCEXCL and TCXONC " +
		"are allowed, so the command can resize the caller's terminal and take its foreground, as an interactive " +
		"shell does"
	switch {
	case !tty && layer && abi > 0: // bwrap's (ABI 0) command has no controlling terminal
		ch.closed("tty", "no terminal device is writable but the caller's terminal: its descriptors, and /dev/tty, "+
			"which the mount layer binds to that terminal"+denied)
	case !tty:
		ch.closed("tty", "no terminal device is writable but the caller's descriptors"+denied)
	case layer:
		ch.closed("tty", "--tty: a private devpts instance on /dev/pts: the caller's terminal only through /dev/tty "+
			"and the descriptors, and new ptys"+jobControl)
	default:
		ch.open("tty", "--tty without a mount layer grants the host's /dev/pts: the command can write to the "+
			"caller's other terminals"+jobControl)
	}
	switch {
	case abi >= 6:
		ch.closed("signals", "Landlock ABI 6 scope: no signal to a process outside the sandbox; seccomp: no "+
			"limit, priority or scheduling change of another process (CPU affinity stays settable), no child of the caller (CLONE_PARENT)")
	case pidNS:
		ch.closed("signals", "a PID namespace of its own: no process outside is visible to signal, or to change "+
			"the limits, priority or affinity of")
	case metadata == MetadataSupervisor:
		ch.closed("signals", msg.Str("supervisor (Landlock ABI ", abi, " does not scope signals): confine sends "+
			"each signal of the command itself, through a pidfd, after checking that the target is the command or "+
			"its descendant (EPERM otherwise; a group signal reaches only the descendants in it), and lets a "+
			"descriptor's SIGIO and SIGURG go only to the command's own process; seccomp: no limit, priority or "+
			"scheduling change of another process (CPU affinity stays settable), no child of the caller (CLONE_PARENT)"))
	default:
		ch.open("signals", msg.Str("needs Landlock ABI 6 (kernel ", landlock.FirstKernel(6), "), a PID namespace "+
			"or the supervisor; this kernel has ABI ", abi, ", no namespace could be made and no supervisor could be had"))
	}
	if abi >= 6 {
		ch.closed("abstract-unix", "Landlock ABI 6 scope: no connection to an abstract unix socket outside the sandbox")
	} else {
		ch.open("abstract-unix", msg.Str("needs Landlock ABI 6 (kernel ", landlock.FirstKernel(6), "); ", abiHere(abi)))
	}
	if abi == 0 { // the bwrap backend
		ch.open("fifo", "no Landlock domain: a FIFO outside the writable roots can be opened for writing "+
			"(read-only mounts do not stop it; Landlock's WRITE_FILE does)")
	}
	ch["git-metadata"] = gitChannel(metadata, nil)
	if abi >= 9 {
		ch.closed("unix-pathname", "Landlock ABI 9 RESOLVE_UNIX: only sockets beneath the writable roots (/tmp among them)")
	} else {
		ch.open("unix-pathname", msg.Str("needs Landlock ABI 9 (kernel ", landlock.FirstKernel(9), "); ", abiHere(abi)))
	}
	return ch
}

// abiHere says which Landlock ABI the launch has: 0 is none (no Landlock here, or the bwrap backend).
func abiHere(abi int) string {
	if abi == 0 {
		return "this launch has no Landlock domain"
	}
	return msg.Str("this kernel has ", abi)
}

// chans is a launch's channels, which closed and open add one to.
type chans map[string]report.Channel

func (c chans) closed(name, how string) { c[name] = report.Channel{Status: report.Closed, How: how} }

func (c chans) open(name, how string) { c[name] = report.Channel{Status: report.Open, How: how} }

// openChannels lists the names of the open channels, sorted.
func openChannels(ch map[string]report.Channel) []string {
	var names []string
	for _, name := range report.SortedNames(ch) {
		if ch[name].Status == report.Open {
			names = append(names, name)
		}
	}
	return names
}

// strictRefusal is --strict's refusal when any channel is open, or nil.
func strictRefusal(ch map[string]report.Channel) error {
	names := openChannels(ch)
	if len(names) == 0 {
		return nil
	}
	return report.Refuse(report.ChannelOpen, "--strict: open channels: ", strings.Join(names, ", "),
		" (confine probe says why)")
}
