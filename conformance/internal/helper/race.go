package helper

// The supervisor's race (issue 15): inside the worktree, one thread exchanges a directory with a symlink to an
// outside directory (renameat2 RENAME_EXCHANGE) as fast as it can, while another changes metadata through the
// swapped component in a loop. A supervisor that checks a path and then acts on it again by path can be made to
// act outside; one that resolves once to a descriptor and acts on that cannot.

import (
	"encoding/json"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// RaceCounts is the race-metadata op's data: per call ("chmod", "utimensat", "setxattr"), how many times each
// outcome ("ok" or the errno's name) happened, and how many exchanges the swapper made.
type RaceCounts struct {
	Calls map[string]map[string]int `json:"calls"`
	Swaps int64                     `json:"swaps"`
	Error string                    `json:"error,omitempty"` // the swapper's error, if it stopped
}

func init() {
	Ops["race-metadata"] = "while a thread exchanges path and path2 (renameat2 RENAME_EXCHANGE) without pause (50 µs " +
		"pauses on one CPU, where the calls pause as long between iterations), call chmod(path/file, 0604), " +
		"utimensat(path/file, 10^9 s) and setxattr(path/file, user.race, \"inside\") arg times each; data: " +
		"RaceCounts as JSON"
}

func raceMetadata(op Op) (string, error) {
	n := atoi(op.Arg)
	var stop atomic.Bool
	var swaps atomic.Int64
	done := make(chan error, 1)
	pause := time.Duration(0)
	if runtime.NumCPU() == 1 {
		pause = 50 * time.Microsecond
	}
	// The calls start once the swapper has made its first exchange (or failed): on a loaded machine the loop
	// could otherwise end before the swapper's thread ever ran.
	started := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer func() {
			if swaps.Load() == 0 {
				close(started)
			}
		}()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, op.Path, unix.AT_FDCWD, op.Path2, unix.RENAME_EXCHANGE); err != nil {
				done <- err
				return
			}
			if swaps.Add(1) == 1 {
				close(started)
			}
			if pause > 0 {
				time.Sleep(pause)
			}
		}
		done <- nil
	}()
	<-started
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c := RaceCounts{Calls: map[string]map[string]int{"chmod": {}, "utimensat": {}, "setxattr": {}}}
	count := func(call string, err error) {
		k := "ok"
		if err != nil {
			k = errnoName(err)
		}
		c.Calls[call][k]++
	}
	target := op.Path + "/file"
	times := []unix.Timespec{{Sec: MetaTime}, {Sec: MetaTime}}
	for i := 0; i < n; i++ {
		count("chmod", unix.Chmod(target, MetaMode))
		count("utimensat", unix.UtimesNanoAt(unix.AT_FDCWD, target, times, 0))
		count("setxattr", unix.Setxattr(target, "user.race", []byte("inside"), 0))
		if pause > 0 { // one CPU: let the swapper run between iterations, or the calls all see one state
			time.Sleep(pause)
		}
	}
	stop.Store(true)
	if err := <-done; err != nil {
		c.Error = "renameat2(RENAME_EXCHANGE): " + errnoName(err)
	}
	c.Swaps = swaps.Load()
	b, _ := json.Marshal(c)
	return string(b), nil
}
