package launch

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it on amd64 and arm64, which both define
// SA_RESTORER (include/uapi/asm-generic/signal.h).
type kernelSigaction struct {
	handler, flags, restorer uintptr
	mask                     uint64
}

// DieBy ends the process by sig, as the layered child's command ended: the Go runtime keeps its own handler
// for crash signals (SEGV, ABRT, BUS, ...) even after signal.Reset, so the default action is restored with
// rt_sigaction itself, the signal unblocked, and sent to this thread. It returns only if sig did not kill.
func DieBy(sig syscall.Signal) {
	var dfl kernelSigaction // SIG_DFL
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&dfl)), 0, 8, 0, 0)
	var set unix.Sigset_t
	set.Val[(sig-1)/64] |= 1 << ((uint(sig) - 1) % 64)
	unix.PthreadSigmask(unix.SIG_UNBLOCK, &set, nil)
	// Not unix.Tgkill, a raw system call: under the supervisor below Landlock ABI 6 this thread's filter hands
	// tgkill to the supervisor's thread, which needs the runtime's one P (GOMAXPROCS 1) to answer; a raw call
	// would keep it.
	unix.Syscall(unix.SYS_TGKILL, uintptr(unix.Getpid()), uintptr(unix.Gettid()), uintptr(sig))
}
