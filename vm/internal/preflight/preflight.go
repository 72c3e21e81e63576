// Package preflight checks inputs before any VM boots: that a kernel image is for the guest arch and that a
// payload's binaries are static executables for it.
package preflight

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KernelImage checks that path is a kernel QEMU can boot with -kernel for arch: an x86 bzImage ("HdrS" at 0x202,
// Documentation/arch/x86/boot.rst) for amd64, an arm64 Image ("ARM\x64" at 0x38, Documentation/arch/arm64/booting.rst)
// for arm64. It names what it found otherwise.
func KernelImage(path, arch string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kernel image: %w", err)
	}
	defer f.Close()
	hdr := make([]byte, 0x210)
	n, _ := io.ReadFull(f, hdr)
	hdr = hdr[:n]
	at := func(off int, magic string) bool {
		return len(hdr) >= off+len(magic) && string(hdr[off:off+len(magic)]) == magic
	}
	var found string
	switch {
	case at(0x202, "HdrS"):
		found = "amd64"
	case at(0x38, "ARM\x64"):
		found = "arm64"
	case at(0, "\x7fELF"):
		return fmt.Errorf("kernel image %s is an ELF file (vmlinux?); QEMU -kernel needs a bzImage (amd64) or Image (arm64)", path)
	case at(0, "\x1f\x8b"):
		return fmt.Errorf("kernel image %s is gzip-compressed; decompress it to an Image first", path)
	default:
		return fmt.Errorf("kernel image %s is not a Linux bzImage or arm64 Image", path)
	}
	if found != arch {
		return fmt.Errorf("kernel image %s is an %s kernel, not %s", path, found, arch)
	}
	return nil
}

var machines = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}

// Payload checks every ELF file under dir: it must be for arch and static (no PT_INTERP: the guest has no dynamic
// loader or libc). cmd, when it names a file under /payload, must exist in dir and be executable. All problems are
// gathered into one error.
func Payload(dir, arch string, cmd string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("payload %s is not a directory", dir)
	}
	var errs []error
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if e := checkELF(p, arch, false); e != nil {
			errs = append(errs, e)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("payload: %w", err)
	}
	if rel, ok := strings.CutPrefix(cmd, "/payload/"); ok {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("guest command %s: not in payload %s", cmd, dir))
		case st.Mode().Perm()&0o111 == 0 || !st.Mode().IsRegular():
			errs = append(errs, fmt.Errorf("guest command %s: not an executable file", cmd))
		}
	}
	return errors.Join(errs...)
}

// StaticBinary checks that p is a static ELF executable for arch.
func StaticBinary(p, arch string) error { return checkELF(p, arch, true) }

func checkELF(p, arch string, mustBeELF bool) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	magic := make([]byte, 4)
	if _, err := io.ReadFull(f, magic); err != nil || !bytes.Equal(magic, []byte(elf.ELFMAG)) {
		if mustBeELF {
			return fmt.Errorf("%s is not an ELF executable", p)
		}
		return nil // not ELF: a script or fixture
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return fmt.Errorf("payload %s: bad ELF: %w", p, err)
	}
	if want := machines[arch]; ef.Machine != want {
		return fmt.Errorf("payload %s: ELF for %s, guest is %s (%s)", p, ef.Machine, arch, want)
	}
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("payload %s: dynamically linked (has an ELF interpreter); build it static, e.g. CGO_ENABLED=0", p)
		}
	}
	return nil
}
