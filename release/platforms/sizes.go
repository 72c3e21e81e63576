package platforms

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// Sizes is the record of the last release's artifact sizes, platforms/sizes.json: the release table prints
// each artifact's change against it, and `confine-release release --sizes` (make release) rewrites it once
// every stage has passed, to be committed with the release. Offline, a committed file is how "the last
// release" is known: there is no registry or tag to ask.
type Sizes struct {
	Comment string `json:"comment"`
	// Version and Commit name the release the sizes are of (confine-release's --version and --commit).
	Version string `json:"version"`
	Commit  string `json:"commit"`
	// Bytes is each platform's launcher size in bytes, by platform name.
	Bytes map[string]int64 `json:"bytes"`
}

// SizesComment is the comment WriteSizes keeps at the top of the file.
const SizesComment = "The sizes of the last release's launchers, in bytes, by platform: the artifact table of " +
	"`confine-release release` prints each artifact's change against them, and `make release` rewrites this file " +
	"once every stage has passed; commit it with the release. The budget is max_bytes in platforms.json."

// LoadSizes reads the record at path. Errors: the file cannot be read, is not the JSON above (unknown fields
// are rejected), or has a size that is not positive.
func LoadSizes(path string) (Sizes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Sizes{}, fmt.Errorf("sizes: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var s Sizes
	if err := dec.Decode(&s); err != nil {
		return Sizes{}, fmt.Errorf("sizes: %s: %w", path, err)
	}
	for name, n := range s.Bytes {
		if n <= 0 {
			return Sizes{}, fmt.Errorf("sizes: %s: %s: size must be positive, got %d", path, name, n)
		}
	}
	return s, nil
}

// WriteSizes writes s to path as indented JSON (platforms sorted by name), with SizesComment.
func WriteSizes(path string, s Sizes) error {
	s.Comment = SizesComment
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("sizes: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("sizes: %w", err)
	}
	return nil
}

// Change says how size compares with the record for platform name: "+61440 (+2.94%)", "-4096 (-0.20%)",
// "0", or "new" where the record has no size for it.
func (s Sizes) Change(name string, size int64) string {
	last, ok := s.Bytes[name]
	if !ok {
		return "new"
	}
	d := size - last
	if d == 0 {
		return "0"
	}
	sign := "+"
	if d < 0 {
		sign = ""
	}
	return sign + strconv.FormatInt(d, 10) + " (" + sign + strconv.FormatFloat(float64(d)*100/float64(last), 'f', 2, 64) + "%)"
}
