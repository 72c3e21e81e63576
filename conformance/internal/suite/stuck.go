package suite

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// processTree describes, one line per thread, the processes under root (root included, found through /proc's
// parent links): "pid/tid comm state wchan=W syscall=S", where state is /proc/PID/task/TID/stat's one-letter
// state, W the kernel function the thread sleeps in (/proc/…/wchan, "0" where the kernel hides it) and S the first
// field of /proc/…/syscall (the system call's number, "running" or "-1" outside one; "?" where the reader may not
// see it). It is the evidence a timed-out command leaves before it is killed: which thread of which process
// waits, and in what. A process that exits while it is read is left out; an empty string means root was gone.
func processTree(root int) string {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(filepath.Join("/proc", e.Name(), "stat")); ok {
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	var lines []string
	for queue := []int{root}; len(queue) > 0; queue = queue[1:] {
		pid := queue[0]
		kids := children[pid]
		sort.Ints(kids)
		queue = append(queue, kids...)
		tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		for _, task := range tasks {
			dir := fmt.Sprintf("/proc/%d/task/%s", pid, task.Name())
			st, ok := readStat(dir + "/stat")
			if !ok {
				continue
			}
			lines = append(lines, fmt.Sprintf("%d/%s %s %s wchan=%s syscall=%s", pid, task.Name(), st.comm, st.state,
				firstField(dir+"/wchan"), firstField(dir+"/syscall")))
		}
	}
	return strings.Join(lines, "\n")
}

// procStat is what processTree takes of a /proc/PID/stat line (proc(5)): the command name, the state and the
// parent's pid.
type procStat struct {
	comm, state string
	ppid        int
}

// readStat parses a /proc/PID/stat or /proc/PID/task/TID/stat file. The command name is in parentheses and may
// hold spaces and parentheses itself, so the fields after it are found from the last ')'.
func readStat(path string) (procStat, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return procStat{}, false
	}
	rest := strings.Fields(s[rp+1:])
	if len(rest) < 2 {
		return procStat{}, false
	}
	ppid, err := strconv.Atoi(rest[1])
	if err != nil {
		return procStat{}, false
	}
	return procStat{comm: s[lp+1 : rp], state: rest[0], ppid: ppid}, true
}

// firstField is the first whitespace-separated field of a small /proc file, or "?" where it cannot be read.
func firstField(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "?"
}
