package launch

import (
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// TestHandoffRoundTrip: each kind's Handoff decodes to what was encoded, with its own part and not the other's;
// an unknown kind, a truncated message and trailing bytes are errors.
func TestHandoffRoundTrip(t *testing.T) {
	shared := Handoff{Path: "/bin/true", Argv: []string{"true", "x"}, Env: []string{"A=1"}, Handled: 7, Scoped: 3,
		Filter: []unix.SockFilter{{Code: 6, Jt: 1, Jf: 2, K: 0x7fff0000}}, ReportFD: 5, ReportName: 3,
		Report: []byte(`{"outcome":"exec"}`), Init: true, Warn: "w"}
	layered, bwrap := shared, shared
	layered.Kind, layered.Layered = HandoffLayered, &LayeredPart{Interop: true,
		Rules: []HandoffRule{{Path: "/w", Dir: true, Writable: true}, {Path: "/dev/pts", Dir: true, Devpts: true}, {Path: "/dev/shm", Dir: true, Shm: true}, {Path: "/dev/pts/3", Terminal: true}, {Path: "/run/user/1000/gnupg/S.gpg-agent", Connect: true},
			{Path: "/main/.git/objects", Dir: true, Writable: true, NoSpecial: true}},
		Guards: []MountGuard{{Root: "/w", Rel: ".git", Pin: true, Dir: true, Dev: 1, Ino: 2}, {Root: "/w", Rel: ".git/config", Dev: 1, Ino: 3}}}
	bwrap.Kind, bwrap.Bwrap = HandoffBwrap, &BwrapPart{Binds: []Bind{{Path: "/w", Dev: 1, Ino: 2}}, UID: 1000, GID: 1000,
		Guards: []MountGuard{{Root: "/w", Rel: ".git/hooks", Dir: true, Dev: 1, Ino: 4}}, WD: Bind{Dev: 1, Ino: 5}}
	for _, h := range []Handoff{layered, bwrap} {
		got, err := unmarshalHandoff(h.marshal())
		if err != nil {
			t.Fatalf("kind %d: %v", h.Kind, err)
		}
		if !reflect.DeepEqual(*got, h) {
			t.Fatalf("kind %d: got %+v, want %+v", h.Kind, *got, h)
		}
	}
	bad := layered
	bad.Kind = 9
	if _, err := unmarshalHandoff(bad.marshal()); err == nil {
		t.Fatal("a handoff of kind 9 was accepted")
	}
	b := bwrap.marshal()
	if _, err := unmarshalHandoff(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated handoff was accepted")
	}
	if _, err := unmarshalHandoff(append(b, 0)); err == nil {
		t.Fatal("a handoff with trailing bytes was accepted")
	}
}
