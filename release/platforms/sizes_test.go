package platforms

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSizesChange(t *testing.T) {
	s := Sizes{Bytes: map[string]int64{"linux_amd64": 2093182}}
	for _, c := range []struct {
		name string
		size int64
		want string
	}{
		{"linux_amd64", 2154622, "+61440 (+2.94%)"},
		{"linux_amd64", 2089086, "-4096 (-0.20%)"},
		{"linux_amd64", 2093182, "0"},
		{"linux_arm64", 1, "new"},
	} {
		if got := s.Change(c.name, c.size); got != c.want {
			t.Errorf("Change(%s, %d) = %q, want %q", c.name, c.size, got, c.want)
		}
	}
}

func TestSizesRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sizes.json")
	want := Sizes{Version: "v1.2.3", Commit: "abc", Bytes: map[string]int64{"linux_amd64": 10, "linux_arm64": 20}}
	if err := WriteSizes(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadSizes(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Version != want.Version || got.Commit != want.Commit || got.Comment != SizesComment ||
		len(got.Bytes) != 2 || got.Bytes["linux_arm64"] != 20 {
		t.Fatalf("round trip: got %+v, want %+v", got, want)
	}
	os.WriteFile(path, []byte(`{"bytes": {"linux_amd64": 0}}`), 0o644)
	if _, err := LoadSizes(path); err == nil {
		t.Fatal("LoadSizes accepted a size of 0")
	}
	os.WriteFile(path, []byte(`{"sizes": {}}`), 0o644)
	if _, err := LoadSizes(path); err == nil {
		t.Fatal("LoadSizes accepted an unknown field")
	}
}

// TestCommittedSizes: platforms/sizes.json parses and records a size for every platform of the table, under
// its budget.
func TestCommittedSizes(t *testing.T) {
	ps, err := Load("../../platforms/platforms.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := LoadSizes("../../platforms/sizes.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		n, ok := s.Bytes[p.Name]
		if !ok {
			t.Errorf("platforms/sizes.json has no size for %s", p.Name)
		} else if n > p.MaxBytes {
			t.Errorf("platforms/sizes.json: %s: %d bytes, over the budget %d", p.Name, n, p.MaxBytes)
		}
	}
}
