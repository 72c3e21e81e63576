package preflight

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeELF writes a minimal ELF64 header for machine, with one program header of type pt.
func fakeELF(t *testing.T, path string, machine elf.Machine, pt elf.ProgType) {
	var b bytes.Buffer
	h := elf.Header64{Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: 1, Phoff: 64, Ehsize: 64, Phentsize: 56, Phnum: 1}
	copy(h.Ident[:], elf.ELFMAG)
	h.Ident[elf.EI_CLASS], h.Ident[elf.EI_DATA], h.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	require.NoError(t, binary.Write(&b, binary.LittleEndian, h))
	require.NoError(t, binary.Write(&b, binary.LittleEndian, elf.Prog64{Type: uint32(pt)}))
	require.NoError(t, os.WriteFile(path, b.Bytes(), 0o755))
}

func TestPayload(t *testing.T) {
	dir := t.TempDir()
	fakeELF(t, filepath.Join(dir, "tool"), elf.EM_X86_64, elf.PT_LOAD)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "fixture.txt"), []byte("data"), 0o644))
	assert.NoError(t, Payload(dir, "amd64", "/payload/tool"))

	err := Payload(dir, "arm64", "/payload/tool")
	assert.ErrorContains(t, err, "ELF for EM_X86_64, guest is arm64")

	assert.ErrorContains(t, Payload(dir, "amd64", "/payload/missing"), "not in payload")
	assert.ErrorContains(t, Payload(dir, "amd64", "/payload/fixture.txt"), "not an executable")
	assert.ErrorContains(t, Payload(filepath.Join(dir, "nope"), "amd64", "/bin/true"), "no such file")

	fakeELF(t, filepath.Join(dir, "dyn"), elf.EM_X86_64, elf.PT_INTERP)
	assert.ErrorContains(t, Payload(dir, "amd64", "/bin/true"), "dynamically linked")
}

func TestStaticBinary(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "init")
	fakeELF(t, p, elf.EM_AARCH64, elf.PT_LOAD)
	assert.NoError(t, StaticBinary(p, "arm64"))
	assert.Error(t, StaticBinary(p, "amd64"))
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755))
	assert.ErrorContains(t, StaticBinary(p, "arm64"), "not an ELF")
}

func TestKernelImage(t *testing.T) {
	dir := t.TempDir()
	img := func(name string, off int, magic string) string {
		b := make([]byte, 0x300)
		copy(b[off:], magic)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	bz := img("bzImage", 0x202, "HdrS")
	arm := img("Image", 0x38, "ARM\x64")
	assert.NoError(t, KernelImage(bz, "amd64"))
	assert.NoError(t, KernelImage(arm, "arm64"))
	assert.ErrorContains(t, KernelImage(bz, "arm64"), "is an amd64 kernel, not arm64")
	assert.ErrorContains(t, KernelImage(arm, "amd64"), "is an arm64 kernel, not amd64")
	assert.ErrorContains(t, KernelImage(img("gz", 0, "\x1f\x8b"), "arm64"), "gzip")
	assert.ErrorContains(t, KernelImage(img("elf", 0, "\x7fELF"), "amd64"), "ELF file")
	assert.ErrorContains(t, KernelImage(img("junk", 0, "junk"), "amd64"), "not a Linux bzImage")
	assert.ErrorContains(t, KernelImage(filepath.Join(dir, "missing"), "amd64"), "no such file")
}
