package elfcheck

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// fakeELF describes a little-endian ELF64 file for writeELF: headers only, enough for debug/elf.
type fakeELF struct {
	typ      elf.Type
	machine  elf.Machine
	interp   string // non-empty: a PT_INTERP program header with this path
	dynamic  bool   // a PT_DYNAMIC program header
	sections []elf.Section64
	names    []string // section names, parallel to sections
}

// writeELF writes f to a new file in t.TempDir and returns its path. Layout: ELF header, program
// headers, PT_INTERP string, .shstrtab contents, section headers.
func writeELF(t *testing.T, f fakeELF) string {
	t.Helper()
	le := binary.LittleEndian
	var progs []elf.Prog64
	progs = append(progs, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(elf.PF_R | elf.PF_X), Align: 0x1000})
	if f.dynamic {
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_DYNAMIC), Flags: uint32(elf.PF_R), Align: 8})
	}
	interpAt := -1
	if f.interp != "" {
		interpAt = len(progs)
		progs = append(progs, elf.Prog64{Type: uint32(elf.PT_INTERP), Flags: uint32(elf.PF_R), Align: 1})
	}
	const ehsize, phsize, shsize = 64, 56, 64
	off := uint64(ehsize + phsize*len(progs))
	interpOff := off
	if interpAt >= 0 {
		progs[interpAt].Off = interpOff
		progs[interpAt].Filesz = uint64(len(f.interp) + 1)
		progs[interpAt].Memsz = progs[interpAt].Filesz
		off += uint64(len(f.interp) + 1)
	}
	// .shstrtab: "\0" + names + ".shstrtab\0"
	strtab := []byte{0}
	secs := []elf.Section64{{}} // SHN_UNDEF
	for i, s := range f.sections {
		s.Name = uint32(len(strtab))
		strtab = append(append(strtab, f.names[i]...), 0)
		secs = append(secs, s)
	}
	shstrndx := len(secs)
	secs = append(secs, elf.Section64{Name: uint32(len(strtab)), Type: uint32(elf.SHT_STRTAB), Off: off, Addralign: 1})
	strtab = append(append(strtab, ".shstrtab"...), 0)
	secs[shstrndx].Size = uint64(len(strtab))
	strOff := off
	off += uint64(len(strtab))
	off = (off + 7) &^ 7
	hdr := elf.Header64{
		Type: uint16(f.typ), Machine: uint16(f.machine), Version: uint32(elf.EV_CURRENT),
		Phoff: ehsize, Shoff: off, Ehsize: ehsize, Phentsize: phsize, Phnum: uint16(len(progs)),
		Shentsize: shsize, Shnum: uint16(len(secs)), Shstrndx: uint16(shstrndx),
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)

	var b bytes.Buffer
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(binary.Write(&b, le, &hdr))
	for i := range progs {
		must(binary.Write(&b, le, &progs[i]))
	}
	if interpAt >= 0 {
		b.WriteString(f.interp)
		b.WriteByte(0)
	}
	if uint64(b.Len()) != strOff {
		t.Fatalf("layout: shstrtab at %d, want %d", b.Len(), strOff)
	}
	b.Write(strtab)
	for uint64(b.Len()) < off {
		b.WriteByte(0)
	}
	for i := range secs {
		must(binary.Write(&b, le, &secs[i]))
	}
	path := filepath.Join(t.TempDir(), "bin")
	must(os.WriteFile(path, b.Bytes(), 0o755))
	return path
}

func progbits(flags elf.SectionFlag) elf.Section64 {
	return elf.Section64{Type: uint32(elf.SHT_PROGBITS), Flags: uint64(flags), Addralign: 1}
}

// TestProblemsSynthetic checks each rule on its own, on hand-made ELF headers.
func TestProblemsSynthetic(t *testing.T) {
	text := progbits(elf.SHF_ALLOC | elf.SHF_EXECINSTR)
	symtab := elf.Section64{Type: uint32(elf.SHT_SYMTAB), Entsize: 24, Addralign: 8}
	for _, tc := range []struct {
		name   string
		f      fakeELF
		goarch string
		want   []string // substrings, one per expected problem, in order; nil: passes
	}{
		{"static stripped amd64", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_X86_64,
			sections: []elf.Section64{text}, names: []string{".text"}}, "amd64", nil},
		{"static stripped arm64", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_AARCH64,
			sections: []elf.Section64{text}, names: []string{".text"}}, "arm64", nil},
		{"wrong machine", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_X86_64}, "arm64",
			[]string{"machine EM_X86_64, want EM_AARCH64"}},
		{"PIE", fakeELF{typ: elf.ET_DYN, machine: elf.EM_X86_64}, "amd64", []string{"type ET_DYN"}},
		{"dynamic", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_X86_64, interp: "/lib64/ld-linux-x86-64.so.2",
			dynamic: true}, "amd64",
			[]string{`PT_INTERP "/lib64/ld-linux-x86-64.so.2"`, "PT_DYNAMIC"}},
		{"symtab", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_AARCH64,
			sections: []elf.Section64{text, symtab}, names: []string{".text", ".symtab"}}, "arm64",
			[]string{".symtab"}},
		{"DWARF", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_X86_64,
			sections: []elf.Section64{progbits(0), progbits(0)}, names: []string{".debug_info", ".zdebug_line"}},
			"amd64", []string{"DWARF sections .debug_info,.zdebug_line"}},
		{"unknown goarch", fakeELF{typ: elf.ET_EXEC, machine: elf.EM_386}, "386",
			[]string{`no ELF machine known for goarch "386"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Inspect(writeELF(t, tc.f))
			if err != nil {
				t.Fatal(err)
			}
			got := r.Problems(tc.goarch)
			if len(got) != len(tc.want) {
				t.Fatalf("Problems(%s) = %q, want %d problems like %q", tc.goarch, got, len(tc.want), tc.want)
			}
			for i, w := range tc.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, got[i], w)
				}
			}
		})
	}
}

func TestCheckNotELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Check(p, "amd64"); err == nil {
		t.Fatal("Check accepted a shell script")
	}
	if err := Check(filepath.Join(t.TempDir(), "missing"), "amd64"); err == nil {
		t.Fatal("Check accepted a missing file")
	}
}

// TestCheckGoBuilt runs Check on real binaries that the Go toolchain builds here, stripped and not,
// static and (with cgo) dynamic, for both release architectures.
func TestCheckGoBuilt(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("skipped: no go toolchain on PATH to build test binaries (%v); the synthetic cases still ran", err)
	}
	dir := t.TempDir()
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.25\n")
	write("main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n")
	build := func(t *testing.T, goarch, cgo string, ldflags string) string {
		t.Helper()
		out := filepath.Join(t.TempDir(), "hello")
		cmd := exec.Command(goBin, "build", "-trimpath", "-ldflags="+ldflags, "-o", out, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+goarch, "CGO_ENABLED="+cgo,
			"GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, b)
		}
		return out
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch+"/stripped", func(t *testing.T) {
			if err := Check(build(t, goarch, "0", "-s -w"), goarch); err != nil {
				t.Fatal(err)
			}
		})
		t.Run(goarch+"/unstripped", func(t *testing.T) {
			r, err := Inspect(build(t, goarch, "0", ""))
			if err != nil {
				t.Fatal(err)
			}
			p := r.Problems(goarch)
			if !r.Symtab || len(r.DWARF) == 0 || len(p) != 2 {
				t.Fatalf("unstripped binary: symtab=%v DWARF=%v problems=%q; want .symtab, DWARF and 2 problems",
					r.Symtab, r.DWARF, p)
			}
			if !slices.Contains(r.DWARF, ".debug_info") {
				t.Errorf("DWARF sections %q lack .debug_info", r.DWARF)
			}
		})
	}
	t.Run("wrong arch", func(t *testing.T) {
		if err := Check(build(t, "arm64", "0", "-s -w"), "amd64"); err == nil ||
			!strings.Contains(err.Error(), "machine EM_AARCH64, want EM_X86_64") {
			t.Fatalf("Check(arm64 binary, amd64) = %v, want a machine mismatch", err)
		}
	})
	t.Run("cgo dynamic", func(t *testing.T) {
		if runtime.GOOS != "linux" {
			t.Skipf("skipped: cgo build for linux needs a linux host, have %s", runtime.GOOS)
		}
		if _, err := exec.LookPath("gcc"); err != nil {
			t.Skipf("skipped: no gcc for a cgo build (%v)", err)
		}
		write("cgo.go", "package main\n\n// int one(void) { return 1; }\nimport \"C\"\n\nvar _ = C.one()\n")
		defer os.Remove(filepath.Join(dir, "cgo.go"))
		r, err := Inspect(build(t, runtime.GOARCH, "1", "-s -w"))
		if err != nil {
			t.Fatal(err)
		}
		if !r.HasInterp || r.Interp == "" || !r.Dynamic {
			t.Fatalf("cgo binary: interp=%q dynamic=%v; want a PT_INTERP path and PT_DYNAMIC", r.Interp, r.Dynamic)
		}
		if p := r.Problems(runtime.GOARCH); len(p) < 2 {
			t.Fatalf("cgo binary passed or nearly: problems %q", p)
		}
	})
}
