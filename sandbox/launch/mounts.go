package launch

import (
	"bytes"
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
	info, err := readFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	for _, line := range bytes.Split(info, []byte{'\n'}) {
		fields := strings.Fields(string(line))
		sep := -1
		for i, f := range fields {
			if f == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+1 >= len(fields) || !kernelFilesystems[fields[sep+1]] {
			continue
		}
		at := unescapeMountinfo(fields[4])
		for _, r := range roots {
			if strings.HasPrefix(at, r.Path+"/") {
				return msg.Err(pathfd.ErrBadPath, ": ", r.Path, " has a ", fields[sep+1], " mounted beneath it at ",
					at, ": kernel state would be writable through it; unmount it or pick another root")
			}
		}
	}
	return nil
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space, \011, \012, \134).
func unescapeMountinfo(s string) string {
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
