package landlock

// abiInfo is what one Landlock ABI version means for confine.
type abiInfo struct {
	kernel string // first mainline kernel with this ABI
	// writes are the write-class filesystem rights this ABI knows; confine handles exactly these.
	writes Access
}

const writesV1 = WriteFile | RemoveDir | RemoveFile | MakeChar | MakeDir | MakeReg | MakeSock | MakeFifo |
	MakeBlock | MakeSym

// abiInfos is indexed by ABI version, as returned by landlock_create_ruleset(NULL, 0,
// LANDLOCK_CREATE_RULESET_VERSION). ABIs 4, 6 to 8, 10 and 11 add network, scoping, logging, thread-sync and UDP
// features, but no write-class filesystem right; 9 adds RESOLVE_UNIX, which confine handles with the writes
// (connecting to a socket outside is acting outside). Scopes (ABI 6) are in Scopes.
var abiInfos = []abiInfo{
	0:  {kernel: "", writes: 0},
	1:  {kernel: "5.13", writes: writesV1},
	2:  {kernel: "5.19", writes: writesV1 | Refer},
	3:  {kernel: "6.2", writes: writesV1 | Refer | Truncate},
	4:  {kernel: "6.7", writes: writesV1 | Refer | Truncate},
	5:  {kernel: "6.10", writes: writesV1 | Refer | Truncate | IoctlDev},
	6:  {kernel: "6.12", writes: writesV1 | Refer | Truncate | IoctlDev},
	7:  {kernel: "6.15", writes: writesV1 | Refer | Truncate | IoctlDev},
	8:  {kernel: "7.0", writes: writesV1 | Refer | Truncate | IoctlDev},
	9:  {kernel: "7.1", writes: writesV1 | Refer | Truncate | IoctlDev | ResolveUnix},
	10: {kernel: "7.2", writes: writesV1 | Refer | Truncate | IoctlDev | ResolveUnix},
	11: {kernel: "7.3", writes: writesV1 | Refer | Truncate | IoctlDev | ResolveUnix},
}

// HighestKnownABI is the newest ABI this build knows. A kernel reporting a newer one is treated as this one:
// every right confine handles is still known to it.
const HighestKnownABI = 11

// HandledWrites returns the write-class rights ABI abi knows, which is exactly the set confine handles.
// It is 0 for abi <= 0 (no Landlock).
func HandledWrites(abi int) Access {
	switch {
	case abi <= 0:
		return 0
	case abi > HighestKnownABI:
		abi = HighestKnownABI
	}
	return abiInfos[abi].writes
}

// FirstKernel returns the first mainline kernel release with ABI abi, e.g. "5.19" for 2, or "" if unknown.
func FirstKernel(abi int) string {
	if abi <= 0 || abi > HighestKnownABI {
		return ""
	}
	return abiInfos[abi].kernel
}

// neverGranted are handled everywhere and granted nowhere: a device node made inside the worktree (by root,
// with CAP_MKNOD) would be a door to the raw disk or memory.
const neverGranted = MakeChar | MakeBlock

// RuleRights returns the rights a path-beneath rule grants under handled: everything handled but
// MAKE_CHAR and MAKE_BLOCK for a directory, and only the file rights for anything else (a rule on a file with
// directory rights is EINVAL).
func RuleRights(handled Access, dir bool) Access {
	if dir {
		return handled &^ neverGranted
	}
	return handled & FileRights
}
