// Package sys holds confine's raw system calls, each named after its uapi. It adds no policy: callers decide
// what to ask for. On other operating systems every call fails with ENOSYS.
package sys
