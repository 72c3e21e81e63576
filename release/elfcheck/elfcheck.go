// Package elfcheck checks that a file is a shippable confine binary: a 64-bit ELF executable for the
// expected machine, statically linked (no PT_INTERP, no PT_DYNAMIC) and stripped (no .symtab and no
// DWARF sections). It reads the file with debug/elf and never runs it.
package elfcheck

import (
	"debug/elf"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// machines maps a Go GOARCH to the ELF e_machine its executables carry (elf.h: EM_X86_64 = 62,
// EM_AARCH64 = 183).
var machines = map[string]elf.Machine{
	"amd64": elf.EM_X86_64,
	"arm64": elf.EM_AARCH64,
}

// MachineFor returns the ELF machine of GOARCH goarch. It fails for an architecture confine does not
// ship.
func MachineFor(goarch string) (elf.Machine, error) {
	m, ok := machines[goarch]
	if !ok {
		return 0, fmt.Errorf("elfcheck: no ELF machine known for goarch %q", goarch)
	}
	return m, nil
}

// Report is what Inspect found in one file.
type Report struct {
	Class   elf.Class
	Type    elf.Type
	Machine elf.Machine
	// Interp is the PT_INTERP program header's contents (the dynamic loader), "" when there is none.
	Interp string
	// HasInterp and Dynamic report a PT_INTERP and a PT_DYNAMIC program header.
	HasInterp, Dynamic bool
	// Symtab reports a .symtab section (the static symbol table that `-s` removes).
	Symtab bool
	// DWARF lists the debug sections present (.debug_* and compressed .zdebug_*), sorted.
	DWARF []string
}

// Inspect reads the ELF headers of the file at path. It fails when the file cannot be opened or is not
// ELF.
func Inspect(path string) (Report, error) {
	f, err := elf.Open(path)
	if err != nil {
		return Report{}, fmt.Errorf("elfcheck: %w", err)
	}
	defer f.Close()
	r := Report{Class: f.Class, Type: f.Type, Machine: f.Machine}
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			r.HasInterp = true
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				r.Interp = strings.TrimRight(string(b), "\x00")
			}
		case elf.PT_DYNAMIC:
			r.Dynamic = true
		}
	}
	for _, s := range f.Sections {
		switch {
		case s.Name == ".symtab" || s.Type == elf.SHT_SYMTAB:
			r.Symtab = true
		case strings.HasPrefix(s.Name, ".debug_") || strings.HasPrefix(s.Name, ".zdebug_"):
			r.DWARF = append(r.DWARF, s.Name)
		}
	}
	sort.Strings(r.DWARF)
	return r, nil
}

// Problems lists every way r falls short of a static, stripped ELF executable for goarch, one short
// phrase each; none means it passes.
func (r Report) Problems(goarch string) []string {
	var out []string
	want, err := MachineFor(goarch)
	if err != nil {
		return []string{err.Error()}
	}
	if r.Machine != want {
		out = append(out, fmt.Sprintf("machine %v, want %v", r.Machine, want))
	}
	if r.Class != elf.ELFCLASS64 {
		out = append(out, fmt.Sprintf("class %v, want ELFCLASS64", r.Class))
	}
	if r.Type != elf.ET_EXEC {
		out = append(out, fmt.Sprintf("type %v, want ET_EXEC (a static non-PIE executable)", r.Type))
	}
	if r.HasInterp {
		out = append(out, fmt.Sprintf("has PT_INTERP %q (dynamically linked)", r.Interp))
	}
	if r.Dynamic {
		out = append(out, "has PT_DYNAMIC (dynamically linked)")
	}
	if r.Symtab {
		out = append(out, "has .symtab (not stripped)")
	}
	if len(r.DWARF) > 0 {
		out = append(out, "has DWARF sections "+strings.Join(r.DWARF, ","))
	}
	return out
}

// Check inspects the file at path and returns nil when it is a static, stripped ELF executable for
// goarch, else one error naming the file and every problem found.
func Check(path, goarch string) error {
	r, err := Inspect(path)
	if err != nil {
		return err
	}
	if p := r.Problems(goarch); len(p) > 0 {
		return errors.New("elfcheck: " + path + ": " + strings.Join(p, "; "))
	}
	return nil
}
