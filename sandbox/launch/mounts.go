package launch

import (
	"strconv"
	"strings"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
)

// kernelFilesystems hold kernel, device or IPC state rather than files (fs/*/ of each; names as in
// /proc/filesystems). A writable root must have none of them mounted beneath it: Landlock's rule covers the
// whole tree beneath the root, mounts included, and the mount layer clones the tree with its submounts, so a
// procfs there would let a root command write /proc/sys.
var kernelFilesystems = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "mqueue": true, "cgroup": true, "cgroup2": true,
	"debugfs": true, "tracefs": true, "securityfs": true, "bpf": true, "configfs": true, "efivarfs": true,
	"pstore": true, "binfmt_misc": true, "fusectl": true, "selinuxfs": true, "nsfs": true, "rpc_pipefs": true,
	"nfsd": true, "hugetlbfs": true, "resctrl": true,
}

// checkSubmounts refuses (pathfd.ErrBadPath) a writable root with a kernel filesystem mounted beneath it,
// reading this mount namespace's /proc/self/mountinfo (proc(5)). Where /proc is not mounted it checks nothing:
// pathfd has then already refused to validate the roots by /proc/self/fd.
func checkSubmounts(roots []*pathfd.Root) error {
	mounts, err := readMounts()
	if err != nil {
		return nil
	}
	for _, m := range mounts {
		if !kernelFilesystems[m.fstype] {
			continue
		}
		for _, r := range roots {
			if strings.HasPrefix(m.point, r.Path+"/") {
				return msg.Err(pathfd.ErrBadPath, ": ", r.Path, " has a ", m.fstype, " mounted beneath it at ",
					m.point, ": kernel state would be writable through it; unmount it or pick another root")
			}
		}
	}
	return nil
}

// A mount is one line of /proc/self/mountinfo (Documentation/filesystems/proc.rst, 3.5).
type mount struct {
	id, parent string
	dev        string   // the file system's major:minor (an overlay has one of its own)
	root       string   // the directory of the file system the mount shows, unescaped
	point      string   // the mount point, unescaped
	layers     []string // an overlay's layer directories (overlayLayers), else none
	rw         bool     // its per-mount options start with rw
	shared     bool     // it has a shared: or master: tag: mounts propagate into it
	fstype     string
	hidden     bool // another mount covers it, or one of its parents: no path reaches it
}

// readMounts parses /proc/self/mountinfo, and marks the mounts no path reaches: one covered by a later mount on
// the same point (whose parent it is), and what lies beneath a covered one.
func readMounts() ([]mount, error) {
	b, err := readFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mount
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) < 10 {
			return nil, msg.Err("mountinfo: malformed line ", msg.Quoted(line))
		}
		m := mount{id: f[0], parent: f[1], dev: f[2], root: UnescapeMountinfo(f[3]), point: UnescapeMountinfo(f[4]),
			rw: strings.HasPrefix(f[5], "rw")}
		i := 6
		for ; i < len(f) && f[i] != "-"; i++ {
			m.shared = m.shared || strings.HasPrefix(f[i], "shared:") || strings.HasPrefix(f[i], "master:")
		}
		if i+1 >= len(f) {
			return nil, msg.Err("mountinfo: no file system type in ", msg.Quoted(line))
		}
		m.fstype = f[i+1]
		if m.fstype == "overlay" && i+3 < len(f) {
			m.layers = overlayLayers(f[i+3])
		}
		out = append(out, m)
	}
	byID, covered := map[string]*mount{}, map[string]bool{}
	for i := range out {
		byID[out[i].id] = &out[i]
	}
	for _, m := range out {
		if p := byID[m.parent]; p != nil && p.point == m.point {
			covered[p.id] = true
		}
	}
	// reached: a path reaches m if its parent is reached and not covered, or m covers its parent (on the same
	// point) and the parent is reached; the root (whose parent is not listed) is reached.
	var reached func(m *mount, depth int) bool
	reached = func(m *mount, depth int) bool {
		p := byID[m.parent]
		switch {
		case p == nil || p == m:
			return true
		case depth > len(out):
			return false
		case p.point == m.point:
			return reached(p, depth+1)
		}
		return !covered[p.id] && reached(p, depth+1)
	}
	for i := range out {
		out[i].hidden = covered[out[i].id] || !reached(&out[i], 0)
	}
	return out, nil
}

// UnescapeMountinfo undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
func UnescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
