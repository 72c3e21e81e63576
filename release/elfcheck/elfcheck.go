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
	// Needed lists the DT_NEEDED entries of the dynamic section (shared libraries), in file order.
	Needed []string
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
	if r.Dynamic {
		if r.Needed, err = f.ImportedLibraries(); err != nil {
			return Report{}, fmt.Errorf("elfcheck: %s: reading DT_NEEDED: %w", path, err)
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

// The checks a Finding belongs to: ELF class, type and machine; static linking; stripping.
const (
	CheckMachine  = "machine"
	CheckStatic   = "static"
	CheckStripped = "stripped"
)

// Finding is one way a Report falls short: the check it fails (CheckMachine, CheckStatic or
// CheckStripped) and a short phrase saying what was found.
type Finding struct {
	Check, Text string
}

// Findings lists every way r falls short of a static, stripped ELF executable for goarch, in the order
// machine, static, stripped; none means it passes.
func (r Report) Findings(goarch string) []Finding {
	var out []Finding
	add := func(check, format string, a ...any) {
		out = append(out, Finding{check, fmt.Sprintf(format, a...)})
	}
	want, err := MachineFor(goarch)
	if err != nil {
		return []Finding{{CheckMachine, err.Error()}}
	}
	if r.Machine != want {
		add(CheckMachine, "machine %v, want %v", r.Machine, want)
	}
	if r.Class != elf.ELFCLASS64 {
		add(CheckMachine, "class %v, want ELFCLASS64", r.Class)
	}
	if r.Type != elf.ET_EXEC {
		add(CheckMachine, "type %v, want ET_EXEC (a static non-PIE executable)", r.Type)
	}
	if r.HasInterp {
		add(CheckStatic, "has PT_INTERP %q (dynamically linked)", r.Interp)
	}
	if r.Dynamic {
		add(CheckStatic, "has PT_DYNAMIC (dynamically linked)")
	}
	if len(r.Needed) > 0 {
		add(CheckStatic, "has DT_NEEDED %s", strings.Join(r.Needed, ","))
	}
	if r.Symtab {
		add(CheckStripped, "has .symtab (not stripped)")
	}
	if len(r.DWARF) > 0 {
		add(CheckStripped, "has DWARF sections %s", strings.Join(r.DWARF, ","))
	}
	return out
}

// Problems is Findings as phrases only.
func (r Report) Problems(goarch string) []string {
	var out []string
	for _, f := range r.Findings(goarch) {
		out = append(out, f.Text)
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

// DiffSections compares two ELF files section by section (name, size, contents) and returns the names
// of the sections that differ or that only one file has, in the first file's order and then the
// second's. Errors: either file cannot be opened or is not ELF, or a section cannot be read. Two files
// with equal sections but different bytes (e.g. headers) give an empty list.
func DiffSections(a, b string) ([]string, error) {
	fa, err := elf.Open(a)
	if err != nil {
		return nil, fmt.Errorf("elfcheck: %w", err)
	}
	defer fa.Close()
	fb, err := elf.Open(b)
	if err != nil {
		return nil, fmt.Errorf("elfcheck: %w", err)
	}
	defer fb.Close()
	read := func(s *elf.Section) ([]byte, error) {
		if s.Type == elf.SHT_NOBITS {
			return nil, nil
		}
		d, err := s.Data()
		if err != nil {
			return nil, fmt.Errorf("elfcheck: section %s: %w", s.Name, err)
		}
		return d, nil
	}
	var out []string
	for _, sa := range fa.Sections {
		sb := fb.Section(sa.Name)
		if sb == nil {
			out = append(out, sa.Name)
			continue
		}
		da, err := read(sa)
		if err != nil {
			return nil, err
		}
		db, err := read(sb)
		if err != nil {
			return nil, err
		}
		if sa.Size != sb.Size || string(da) != string(db) {
			out = append(out, sa.Name)
		}
	}
	for _, sb := range fb.Sections {
		if fa.Section(sb.Name) == nil {
			out = append(out, sb.Name)
		}
	}
	return out, nil
}
