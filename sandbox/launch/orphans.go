package launch

import (
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/report"
	"github.com/confine-dev/confine/sandbox/supervisor"
)

// Every process the command leaves behind is ended when the command exits, in every strategy (issue 28): an
// agent that runs one command per confine call must not get control back while a background descendant still
// writes in the worktree, and a descendant that outlived a supervisor would lose its metadata rights halfway
// (ENOSYS). The strategies with a PID namespace (PIDNSChild, BwrapChild) get this from the kernel: the
// namespace dies with its init. Every other one keeps this process as the command's parent and a child
// subreaper (PR_SET_CHILD_SUBREAPER, 3.4), so that each orphan of the command is reparented to it (the command
// cannot hand a child to confine's own parent: seccomp denies CLONE_PARENT), and ends them all
// (endDescendants) once the command has been reaped.

// childrenRefusal refuses a launch whose process already has children: a process that started them and then
// exec'd confine (sh -c 'job & exec confine …'). confine would take them for the command's: it ends every child
// it has once the command exits, and its supervisor lets the command signal its descendants. One waitid
// (P_ALL, WNOHANG|WNOWAIT: nothing is reaped): ECHILD where there is none. __WALL (linux/wait.h, 2.4) so that
// a clone child whose exit signal is not SIGCHLD counts too: without it waitid sees none of those (issue 43).
func childrenRefusal() error {
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WSTOPPED|unix.WCONTINUED|unix.WNOHANG|unix.WNOWAIT|unix.WALL, nil); err != nil {
		return nil // ECHILD: no child
	}
	return report.Refuse(report.ForeignChildren, "this process already has children, started before confine was "+
		"exec'd: confine would end them with the command and let the command signal them; start confine as a "+
		"child (without exec), or start those jobs after it")
}

// becomeSubreaper makes this process a child subreaper: the command's orphans become its children.
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return report.Refuse(report.Internal, "prctl(PR_SET_CHILD_SUBREAPER): ", err.Error())
	}
	return nil
}

// endDescendants kills (SIGKILL) and reaps every child this process still has, and every child those leave it
// (it is a child subreaper), until it has none: then no descendant is left, since each living descendant is a
// child of this process or of a living descendant. It returns how many it reaped. Where nothing is left it costs
// one wait4. The killing runs on a thread of its own: the caller's may be the confined one, whose signals a
// seccomp filter may hand to the supervisor (which may be done), and whose capabilities are the command's.
//
// A PID is signalled only while it names a child that this process has not reaped, so it cannot have been
// reused: only this process reaps its children, and from here on only this function does.
func endDescendants() int {
	if !hasChildren() {
		return 0
	}
	done := make(chan int)
	go func() { done <- killDescendants() }()
	return <-done
}

// hasChildren reaps the children that have ended and says whether any is left (wait4 WNOHANG: not ECHILD).
func hasChildren() bool {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG|syscall.WALL, nil)
		switch {
		case err == syscall.EINTR:
		case err != nil:
			return false // ECHILD
		case pid == 0:
			return true
		}
	}
}

func killDescendants() (reaped int) {
	for {
		for { // reap what has ended
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG|syscall.WALL, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return reaped // ECHILD: none left
			}
			if pid == 0 {
				break
			}
			reaped++
		}
		kids := childPIDs()
		if len(kids) == 0 {
			return reaped // children that no /proc lists (no /proc): left as they are
		}
		for _, pid := range kids {
			unix.Kill(pid, unix.SIGKILL)
		}
		var ws syscall.WaitStatus
		if pid, err := syscall.Wait4(-1, &ws, syscall.WALL, nil); err == nil && pid > 0 {
			reaped++
		}
	}
}

// childPIDs lists this process's children: /proc/self/task/TID/children of every thread (3.5, with
// CONFIG_PROC_CHILDREN), else the supervisor's scan of every /proc/PID/stat (supervisor.ChildrenOf).
func childPIDs() []int {
	var kids []int
	tids, err := dirNames("/proc/self/task")
	listed := err == nil
	for _, tid := range tids {
		b, err := readFile("/proc/self/task/" + tid + "/children")
		if err != nil {
			listed = false
			break
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				kids = append(kids, pid)
			}
		}
	}
	if listed {
		return kids
	}
	return supervisor.ChildrenOf(unix.Getpid())
}
