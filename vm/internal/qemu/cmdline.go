// Package qemu builds QEMU command lines from device values and runs one boot with a host deadline and a
// no-output watchdog.
package qemu

import (
	"fmt"
	"strings"
)

// Device contributes QEMU arguments and kernel command-line arguments.
type Device interface {
	Cmdline() []string // QEMU arguments
	KArgs() []string   // kernel command-line arguments
}

// Accelerators.
const (
	KVM = "kvm"
	TCG = "tcg"
)

// machine is the board, CPU and accelerator, chosen by the one GOARCH switch in this package.
type machine struct{ arch, accel string }

func (m machine) Cmdline() []string {
	cpu := "max"
	if m.accel == KVM {
		cpu = "host"
	}
	switch m.arch {
	case "amd64":
		return []string{"-M", "q35", "-accel", m.accel, "-cpu", cpu}
	case "arm64":
		board := "virt"
		if m.accel == TCG {
			cpu = "max,pauth-impdef=on" // the default QARMA pointer-auth emulation is ~2x slower under TCG
		} else {
			// virt defaults to a GICv2, which KVM on GICv3-only hosts cannot provide; max picks the host's
			// (QEMU docs/system/arm/virt.rst, gic-version).
			board = "virt,gic-version=max"
		}
		return []string{"-M", board, "-accel", m.accel, "-cpu", cpu}
	}
	panic("BUG(vm): unsupported arch " + m.arch) // validated by Binary before any device is built
}

func (m machine) KArgs() []string {
	if m.arch == "arm64" {
		return []string{"console=ttyAMA0"}
	}
	return []string{"console=ttyS0"}
}

// serialStdio puts the first serial port on QEMU's stdout; -nodefaults leaves no other device.
type serialStdio struct{}

func (serialStdio) Cmdline() []string {
	// mon:stdio multiplexes the serial port with QEMU's monitor so the host can send a break (C-a b) for sysrq;
	// nothing else of the monitor is used.
	return []string{"-nodefaults", "-no-reboot", "-display", "none", "-serial", "mon:stdio"}
}
func (serialStdio) KArgs() []string { return []string{"loglevel=4", "sysrq_always_enabled"} }

// exitOnPanic makes a kernel panic reboot at once, which -no-reboot turns into a QEMU exit.
type exitOnPanic struct{}

func (exitOnPanic) Cmdline() []string { return nil }
func (exitOnPanic) KArgs() []string   { return []string{"panic=-1", "oops=panic"} }

type resources struct{ cpus, memMiB int }

func (r resources) Cmdline() []string {
	return []string{"-smp", fmt.Sprint(r.cpus), "-m", fmt.Sprint(r.memMiB)}
}
func (resources) KArgs() []string { return nil }

type kernel struct{ image, initrd string }

func (k kernel) Cmdline() []string { return []string{"-kernel", k.image, "-initrd", k.initrd} }
func (kernel) KArgs() []string     { return []string{"rdinit=/init"} }

type extraKArgs []string

func (extraKArgs) Cmdline() []string { return nil }
func (e extraKArgs) KArgs() []string { return e }

// Binary returns the QEMU system emulator for a guest arch.
func Binary(arch string) (string, error) {
	switch arch {
	case "amd64":
		return "qemu-system-x86_64", nil
	case "arm64":
		return "qemu-system-aarch64", nil
	}
	return "", fmt.Errorf("unsupported guest arch %q (amd64, arm64)", arch)
}

// Spec describes one boot.
type Spec struct {
	Arch   string // amd64 or arm64
	Accel  string // KVM or TCG
	Kernel string // kernel image path
	Initrd string // initramfs path (concatenated gzip'd cpio archives)
	Extra  string // extra kernel command-line arguments, space separated (e.g. "lsm=...")
	CPUs   int    // default 1: under TCG, -smp 2 booted arm64 slower than 1 (measured on the 2-core CI machine)
	MemMiB int    // default 512
}

// Cmdline returns the QEMU binary and arguments for s.
func (s Spec) Cmdline() (string, []string, error) {
	bin, err := Binary(s.Arch)
	if err != nil {
		return "", nil, err
	}
	if s.Accel != KVM && s.Accel != TCG {
		return "", nil, fmt.Errorf("unknown accelerator %q (kvm, tcg)", s.Accel)
	}
	cpus, mem := s.CPUs, s.MemMiB
	if cpus == 0 {
		cpus = 1
	}
	if mem == 0 {
		mem = 512
	}
	devs := []Device{
		machine{s.Arch, s.Accel},
		resources{cpus, mem},
		serialStdio{},
		exitOnPanic{},
		kernel{s.Kernel, s.Initrd},
		extraKArgs(strings.Fields(s.Extra)), // last: a user's setting wins over ours
	}
	var args, kargs []string
	for _, d := range devs {
		args = append(args, d.Cmdline()...)
		kargs = append(kargs, d.KArgs()...)
	}
	return bin, append(args, "-append", strings.Join(kargs, " ")), nil
}
