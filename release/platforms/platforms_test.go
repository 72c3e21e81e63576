package platforms

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// repoTable is platforms/platforms.json, relative to this package (also under bazel test, where it is
// a data dependency laid out the same way in the runfiles).
const repoTable = "../../platforms/platforms.json"

func TestLoadRepoTable(t *testing.T) {
	ps, err := Load(repoTable)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if want := strings.HasPrefix(p.Name, "wsl2_"); p.WSL2 != want {
			t.Errorf("%s: wsl2 = %v, want %v (the name says)", p.Name, p.WSL2, want)
		}
		if !strings.HasSuffix(p.Name, "_"+p.GOARCH) {
			t.Errorf("%s: goarch %s does not match the name", p.Name, p.GOARCH)
		}
	}
	want := []string{"linux_amd64", "linux_arm64", "wsl2_amd64", "wsl2_arm64"}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("platforms = %q, want %q", names, want)
	}
}

func TestLoadRejects(t *testing.T) {
	for _, tc := range []struct{ name, json, want string }{
		{"not json", `{`, "unexpected EOF"},
		{"unknown field", `{"platforms":[{"name":"linux_amd64","goos":"linux","goarch":"amd64","cpu":"x"}]}`,
			`unknown field "cpu"`},
		{"empty", `{"platforms":[]}`, "no platforms"},
		{"bad name", `{"platforms":[{"name":"Linux-amd64","goos":"linux","goarch":"amd64","max_bytes":1}]}`, "bad name"},
		{"duplicate", `{"platforms":[{"name":"linux_amd64","goos":"linux","goarch":"amd64","max_bytes":1},` +
			`{"name":"linux_amd64","goos":"linux","goarch":"amd64","max_bytes":1}]}`, "duplicate name"},
		{"goos", `{"platforms":[{"name":"darwin_arm64","goos":"darwin","goarch":"arm64","max_bytes":1}]}`, "unsupported goos"},
		{"goarch", `{"platforms":[{"name":"linux_386","goos":"linux","goarch":"386","max_bytes":1}]}`, "unsupported goarch"},
		{"no budget", `{"platforms":[{"name":"linux_amd64","goos":"linux","goarch":"amd64"}]}`, "max_bytes must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "platforms.json")
			if err := os.WriteFile(p, []byte(tc.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

// TestBazelTableAgrees compares platforms.json with platforms/platforms.bzl, the table the Bazel
// platforms and //:release_binaries are generated from, as Bazel itself evaluated it
// (//platforms:platforms_bzl_json, a data dependency of this test under bazel test).
func TestBazelTableAgrees(t *testing.T) {
	const bzlJSON = "../../platforms/platforms_bzl.json"
	b, err := os.ReadFile(bzlJSON)
	if os.IsNotExist(err) && os.Getenv("TEST_SRCDIR") == "" {
		t.Skipf("skipped: %s is a Bazel output; run `tools/bazel test //release/platforms:platforms_test`", bzlJSON)
	}
	if err != nil {
		t.Fatal(err)
	}
	var bzl map[string]struct {
		GOOS   string `json:"goos"`
		GOARCH string `json:"goarch"`
		WSL2   bool   `json:"wsl2"`
	}
	if err := json.Unmarshal(b, &bzl); err != nil {
		t.Fatalf("%s: %v", bzlJSON, err)
	}
	ps, err := Load(repoTable)
	if err != nil {
		t.Fatal(err)
	}
	if len(bzl) != len(ps) {
		t.Errorf("platforms.bzl has %d platforms, platforms.json %d", len(bzl), len(ps))
	}
	for _, p := range ps {
		q, ok := bzl[p.Name]
		if !ok {
			t.Errorf("%s: in platforms.json, missing from platforms.bzl", p.Name)
			continue
		}
		if q.GOOS != p.GOOS || q.GOARCH != p.GOARCH || q.WSL2 != p.WSL2 {
			t.Errorf("%s: platforms.bzl says %+v, platforms.json says %+v", p.Name, q, p)
		}
	}
}

func TestFind(t *testing.T) {
	ps, err := Load(repoTable)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := Find(ps, "wsl2_arm64"); err != nil || p.GOARCH != "arm64" || !p.WSL2 {
		t.Fatalf("Find(wsl2_arm64) = %+v, %v", p, err)
	}
	if _, err := Find(ps, "darwin_arm64"); err == nil || !strings.Contains(err.Error(), `"darwin_arm64" is not in the table`) {
		t.Fatalf("Find(darwin_arm64) = %v, want a not-in-the-table error", err)
	}
}
