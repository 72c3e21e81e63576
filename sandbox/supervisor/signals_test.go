package supervisor

import (
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestDescends: the descendant check over a process table that may change between reads (each read of a PID
// returns the next entry of its list, the last one for good). Root is 100.
func TestDescends(t *testing.T) {
	cases := map[string]struct {
		pid  int
		tab  map[int][]int // pid -> the PPid each successive read returns
		want bool
	}{
		"child":                   {200, map[int][]int{200: {100}}, true},
		"grandchild":              {300, map[int][]int{300: {200}, 200: {100}}, true},
		"orphan reparented to us": {300, map[int][]int{300: {100}}, true},
		"root itself":             {100, map[int][]int{100: {50}, 50: {1}, 1: {0}}, false},
		"outsider":                {400, map[int][]int{400: {50}, 50: {1}, 1: {0}}, false},
		"our parent":              {50, map[int][]int{50: {1}, 1: {0}}, false},
		"gone":                    {400, map[int][]int{}, false},
		"parent gone mid-walk":    {300, map[int][]int{300: {200}}, false},
		"kernel thread (PPid 0)":  {2, map[int][]int{2: {0}}, false},
		"deep chain":              {5, map[int][]int{5: {4}, 4: {3}, 3: {2}, 2: {100}}, true},
		// An outsider 400 whose parent 250 ended: read as 250's child first, then 250's number went to a
		// descendant of ours. The re-read of 400 shows it was handed to init meanwhile: refused.
		"parent number reused by a descendant": {400, map[int][]int{400: {250, 1}, 250: {100}}, false},
		// The same, but the re-read still shows 250: 250 was alive while read, a real descendant.
		"parent alive through the walk": {400, map[int][]int{400: {250, 250}, 250: {100}}, true},
		// A loop (impossible in a real table) ends at the depth bound.
		"loop": {7, map[int][]int{7: {8}, 8: {7}}, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			reads := map[int]int{}
			parent := func(pid int) (int, error) {
				l, ok := c.tab[pid]
				if !ok || len(l) == 0 {
					return 0, unix.ESRCH
				}
				i := min(reads[pid], len(l)-1)
				reads[pid]++
				return l[i], nil
			}
			if got := descends(c.pid, 100, parent); got != c.want {
				t.Fatalf("descends(%d) = %v, want %v", c.pid, got, c.want)
			}
		})
	}
}

// TestCallerSelf: the caller's own thread group or thread, in its own PID namespace when nested.
func TestCallerSelf(t *testing.T) {
	c := caller{tid: 12, tgid: 10}
	for pid, want := range map[int]bool{10: true, 12: true, 11: false, 0: false, -10: false} {
		if got := c.self(pid); got != want {
			t.Errorf("self(%d) = %v, want %v", pid, got, want)
		}
	}
	n := caller{tid: 12, tgid: 10, nested: true, nsTid: 3, nsTgid: 2}
	for pid, want := range map[int]bool{2: true, 3: true, 10: false, 12: false} {
		if got := n.self(pid); got != want {
			t.Errorf("nested self(%d) = %v, want %v", pid, got, want)
		}
	}
}

// TestFdinfoPid: the Pid line of a pidfd's fdinfo, as read from this process's own pidfd.
func TestFdinfoPid(t *testing.T) {
	fd, err := unix.PidfdOpen(unix.Getpid(), 0)
	if err != nil {
		t.Skipf("pidfd_open (5.3) refused here: %v", err)
	}
	defer unix.Close(fd)
	pid, err := fdinfoPid("/proc/self/fdinfo/" + strconv.Itoa(fd))
	if err != nil || pid != unix.Getpid() {
		t.Fatalf("fdinfoPid = %d, %v; want %d", pid, err, unix.Getpid())
	}
	if _, err := fdinfoPid("/proc/self/fdinfo/0"); err != unix.EPERM {
		t.Fatalf("fdinfoPid of stdin: %v, want EPERM (no pidfd)", err)
	}
}
