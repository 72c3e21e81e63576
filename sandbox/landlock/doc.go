// Package landlock builds confine's write-only Landlock ruleset: the handled access rights for an ABI, the
// rights a path-beneath rule may carry, and the create → add rules → restrict sequence.
//
// The kernel's documentation is the reference:
// https://docs.kernel.org/userspace-api/landlock.html and include/uapi/linux/landlock.h.
//
// Reads (READ_FILE, READ_DIR) and EXECUTE are never handled, so they stay allowed everywhere.
package landlock
