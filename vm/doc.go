// Package vm holds the kernel manifest: the pinned Debian kernels that confine is proven on, and the Landlock ABI
// each is expected to report. It is the single source of "kernel -> expected ABI"; the runner (cmd/vm) boots these
// kernels in QEMU and conformance reads the expectations from here.
package vm
