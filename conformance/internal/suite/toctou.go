package suite

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/conformance/internal/helper"
)

var toctouCases = append(toctouStartCases, metadataSwapCases()...)

var toctouStartCases = []Case{{
	ID:    "toctou-symlink-swap/root-swap",
	Title: "the worktree path flips between a real dir and a symlink to outside while confine starts",
	Rationale: "A launcher that checks a root path and then opens it again can be raced: between the check and " +
		"the open, the path becomes a symlink, and the rule lands on the attacker's directory. A goroutine " +
		"atomically exchanges (renameat2 RENAME_EXCHANGE) the worktree path between the real directory and a " +
		"symlink to an outside directory, thousands of times, while confine starts and the confined helper " +
		"writes through the same path. Every attempt must end in a refusal (bad-root) or in a sandbox bound to " +
		"the real directory: no write may ever land in the outside directory. The attempt count is reported. " + bwrapRaceText,
	Expect: []Expect{{"ABI ≥ 1", "each attempt: exit 125 bad-root, or the write lands in the real dir or is denied; the outside dir stays empty"},
		bwrapRaceRow, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: func(t *T) {
		arena := t.Base + "/arena"
		t.Mkdir(arena+"/wt", t.Out+"/target")
		mustSymlink(t, t.Out+"/target", arena+"/alt")
		t.Unwatch(arena)
	},
	Run: func(t *T) {
		arena := t.Base + "/arena"
		race(t, arena+"/wt", arena+"/alt", arena+"/wt", arena+"/wt", []string{t.Out + "/target"})
	},
}, {
	ID:    "toctou-symlink-swap/component-swap",
	Title: "a parent component of the worktree path flips between a real dir and a symlink to outside",
	Rationale: "The same race one level up: the worktree is arena/c/wt, and arena/c flips between a real directory " +
		"and a symlink to an outside directory that also holds a wt/. Resolving with O_NOFOLLOW on the last " +
		"component only would be fooled; openat2(RESOLVE_NO_SYMLINKS) or a component-by-component walk is not. " +
		bwrapRaceText,
	Expect: []Expect{{"ABI ≥ 1", "each attempt: exit 125 bad-root, or the write lands in the real dir or is denied; the outside dir stays empty"},
		bwrapRaceRow, noLandlockRow},
	Needs: Needs{Confined: true},
	Setup: func(t *T) {
		arena := t.Base + "/arena"
		t.Mkdir(arena+"/c/wt", t.Out+"/parent/wt")
		mustSymlink(t, t.Out+"/parent", arena+"/alt")
		t.Unwatch(arena)
	},
	Run: func(t *T) {
		arena := t.Base + "/arena"
		race(t, arena+"/c", arena+"/alt", arena+"/c/wt", arena+"/c/wt", []string{t.Out + "/parent/wt"})
	},
}, {
	ID:    "toctou-symlink-swap/gitfile-swap",
	Title: "the worktree's .git flips between a gitdir file and a symlink to an outside gitdir file",
	Rationale: "In a linked worktree .git is a file naming the git directory, and it is attacker-controlled text. " +
		"A launcher that reads it to grant git's metadata directories must read it once, without following a " +
		"symlink, and validate where it points. Here .git flips between a real gitdir file and a symlink to a file " +
		"that points into an outside directory, while the helper writes into that outside directory: no write may " +
		"land there, whatever the launcher does with .git.",
	Expect: []Expect{{"ABI ≥ 1", "every write into the outside gitdir is denied (or confine refuses); it stays empty"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Setup: func(t *T) {
		gitdir := t.Base + "/main.git/worktrees/wt"
		t.Mkdir(gitdir, t.Out+"/gitdir")
		t.WriteFile(t.WT+"/.git", "gitdir: "+gitdir+"\n", 0o644)
		t.WriteFile(t.Out+"/evil-gitfile", "gitdir: "+t.Out+"/gitdir\n", 0o644)
		mustSymlink(t, t.Out+"/evil-gitfile", t.WT+"/.git-alt")
	},
	Run: func(t *T) {
		race(t, t.WT+"/.git", t.WT+"/.git-alt", t.WT, t.Out+"/gitdir", []string{t.Out + "/gitdir"})
	},
}, {
	ID:    "toctou-symlink-swap/symlink-inside",
	Title: "a symlink inside the worktree that points outside grants nothing",
	Rationale: "Rules bind to inodes, not to strings: a write through wt/escape -> outside is checked where it lands. " +
		"A sandbox that resolved paths in user space, or put a rule on a symlink's target, would let this through. " +
		"The symlink itself, being inside, may be removed.",
	Expect: []Expect{{"ABI ≥ 1", "writes through the symlinks fail with EACCES; unlinking the symlink succeeds"}, noLandlockRow},
	Needs:  Needs{Confined: true},
	Setup: func(t *T) {
		mustSymlink(t, t.Out, t.WT+"/escape")
		mustSymlink(t, t.Out+"/file.txt", t.WT+"/escape-file")
		mustSymlink(t, t.Out+"/dir", t.WT+"/sub/escape-dir")
	},
	Run: func(t *T) {
		w := t.WT
		res := t.Helper(t.Flags(), opArg("create", w+"/escape/new.txt", "x"), opArg("write", w+"/escape-file", "x"),
			op("trunc-open", w+"/escape-file"), op("mkdir", w+"/escape/newdir"), op("unlink", w+"/escape/file.txt"),
			opArg("create", w+"/sub/escape-dir/new.txt", "x"), op2("rename", w+"/escape/file.txt", w+"/escape/moved.txt"),
			op("unlink", w+"/escape-file"))
		t.WantDenied("through a symlink inside the worktree", deniedX, res[:len(res)-1]...)
		t.WantOK("removing the symlink itself", res[len(res)-1])
	},
}}

// bwrapRaceText and bwrapRaceRow are what the start races check under bwrap.
const bwrapRaceText = "Under bwrap the root is handed to bwrap as its validated descriptor (/proc/self/fd/N); an " +
	"attempt may also end in bwrap's failure (125, backend-unavailable, nothing ran), but never in one that " +
	"shows bwrap looked the bind's source up by path (its source vanished, or it names the outside directory)."

var bwrapRaceRow = Expect{"bwrap (no Landlock, or --backend bwrap)", "each attempt: as above, or 125 backend-unavailable whose bwrap error shows no lookup of the source by path; the outside dir stays empty"}

// metadataSwapCases are the supervisor's race (issue 15), as confine picks its mode and without namespaces (the
// supervisor itself; seccomp-deny on launchers before it).
func metadataSwapCases() []Case {
	mk := func(fallback bool) Case {
		id, title := "toctou-symlink-swap/metadata-swap", "a path component flips between a worktree dir and a symlink to outside while the command changes metadata through it"
		rat := "A supervisor that performs metadata changes for the command (issue 15) must resolve the target " +
			"once, to a descriptor, check that it lies beneath a writable root, and act on that descriptor; one " +
			"that checks a path and then acts by path again can be raced. Inside the worktree the command runs two " +
			"threads: one exchanges (renameat2 RENAME_EXCHANGE) a directory d with a symlink to an outside " +
			"directory as fast as it can; the other calls chmod, utimensat and setxattr on d/file in a loop, 50 " +
			"times each. One attempt is one such launch, since the calls of one launch do not win independently; " +
			"where the launch gets the supervisor, the attempts are planned from the measured win rate of a " +
			"supervisor that acts by path (conformance/race-rates.json). Nothing outside may ever change: the " +
			"outside file (mode, times, ctime, xattr) is checked after every launch, the runner snapshots the outside directory (modes, owners, times, ctime, xattrs) " +
			"before and after, and every change that reported success must have landed in the worktree's file. Under the mount layer the kernel resolves the path " +
			"itself, so the case checks that mode too."
		exp := []Expect{{"ABI ≥ 1, mount-layer", "each call succeeds (landing inside) or fails with EROFS; the outside directory unchanged"}}
		if fallback {
			id += "-fallback"
			title += ", where no namespace can be had (the supervisor)"
			rat += " This case runs confine where no user or mount namespace can be made (internal/nsdeny), " +
				"so the supervisor answers every call."
			exp = []Expect{{"ABI ≥ 1, supervisor", "each call succeeds (landing inside) or fails with EPERM; the outside directory unchanged"},
				{"ABI ≥ 1, seccomp-deny (launchers before issue 15)", "every call fails with EPERM (the race is moot, noted); the outside directory unchanged"}}
		}
		c := Case{ID: id, Title: title, Rationale: rat, Expect: append(exp, noLandlockRowFor(fallback)), Needs: needsFallback(fallback),
			Setup: metadataSwapSetup, Run: func(t *T) { metadataSwap(t, fallback) }}
		// The planted bug (supervisor-act-by-path) lives in the supervisor: a column plans the case only where
		// its launch gets the supervisor. Under the mount layer or bwrap the kernel resolves the path, and under
		// seccomp-deny every call is denied, so no planted bug can win there. The plain case meets the supervisor
		// only where no mount namespace can be had, and then it races the fallback's launch: the fallback's
		// measured rate plans it.
		if fallback {
			c.RatedWhere = func(_, noNamespaces string) bool { return noNamespaces == "supervisor" }
		} else {
			c.RatedWhere = func(metadata, _ string) bool { return metadata == "supervisor" }
			c.RateOf = id + "-fallback"
		}
		return c
	}
	return []Case{mk(false), mk(true)}
}

// metadataSwapSetup makes the arena: wt/arena/d/file (0644, user.race "orig" where user xattrs exist) and
// wt/arena/alt -> outside/racedir, which holds a file of its own (0640, mtime 2001, user.race "outside").
func metadataSwapSetup(t *T) {
	arena, racedir := t.WT+"/arena", t.Out+"/racedir"
	t.WriteFile(arena+"/d/file", "inside\n", 0o644)
	t.WriteFile(racedir+"/file", "outside\n", 0o640)
	_ = unix.Setxattr(arena+"/d/file", "user.race", []byte("orig"), 0)
	_ = unix.Setxattr(racedir+"/file", "user.race", []byte("outside"), 0)
	setTimes(t, racedir+"/file", wfTime1)
	mustSymlink(t, racedir, arena+"/alt")
}

// metadataSwapCalls is how many times each metadata call races the swapper in one attempt, one launch. An
// attempt is a launch, not a call: the calls of one launch do not win independently (a launch of the
// supervisor-act-by-path mutant wins many of its calls or none, on this host 25-77 of 300 or 0), so a win rate
// per call would promise a power the case does not have; launches are measured and planned like the start
// races' (conformance/race-rates.json, internal/power).
const metadataSwapCalls = 50

// metadataSwapExtra bounds the launches added when none of the planned ones had a call succeed: on a loaded
// machine a launch can see the swapper exchange an odd number of times, so that every call meets the symlink
// and the race proves nothing either way.
const metadataSwapExtra = 4

// metadataSwap runs the race-metadata op in t.Cfg().Attempts launches: the attempts a measured win rate planned,
// or a measuring run's count. Without a plan (no --race-rates, or a column where no planted bug can win the case:
// Case.RatedWhere) the fixed count counts calls, as it did when one launch was the whole race: ⌈count/50⌉ launches.
// More launches follow, up to metadataSwapExtra, while no call has succeeded; a seccomp-deny launcher ends it at
// the first. After each launch the outside file is compared with what it was: any change (chmod, utimensat and
// setxattr all move its ctime) is a call that landed outside, which stops the case with its attempt number, or,
// when measuring a planted bug's win rate (Config.MeasureRaces), counts one win and puts the file back.
func metadataSwap(t *T, fallback bool) {
	arena, outside := t.WT+"/arena", t.Out+"/racedir/file"
	ctime := func() unix.Timespec {
		var st unix.Stat_t
		if err := unix.Lstat(outside, &st); err != nil {
			t.Fatalf("outside: %v", err)
		}
		return st.Ctim
	}
	// changed is what differs from the outside file's fixture, or "" (its ctime is compared separately).
	changed := func() string {
		if msg := wantModeTime(outside, 0o640, wfTime1, true); msg != "" {
			return msg
		}
		if v := getxattr(outside, "user.race"); v != "outside" && !strings.HasPrefix(v, "<") {
			return fmt.Sprintf("%s has user.race %q, want %q", outside, v, "outside")
		}
		return ""
	}
	seen := ctime()
	var m string
	c := helper.RaceCounts{Calls: map[string]map[string]int{}}
	okTotal := func() int { return c.Calls["chmod"]["ok"] + c.Calls["utimensat"]["ok"] + c.Calls["setxattr"]["ok"] }
	n := t.Cfg().Attempts
	if _, planned := t.Cfg().RacePlans[t.c.ID]; !planned && !t.Cfg().MeasureRaces {
		n = (n + metadataSwapCalls - 1) / metadataSwapCalls
	}
	for i := 0; i < n || (okTotal() == 0 && i < n+metadataSwapExtra); i++ {
		t.Attempts = i + 1
		r, res := t.HelperRun(t.Flags(), Opts{NoNamespaces: fallback}, helper.Op{Op: "race-metadata", Path: arena + "/d", Path2: arena + "/alt", Arg: strconv.Itoa(metadataSwapCalls)})
		if r.Report == nil {
			t.Fatalf("attempt %d: no report on --report-fd", t.Attempts)
		}
		if m != "" && r.Report.Metadata != m {
			t.Fatalf("attempt %d: report.metadata %q, where the attempts before had %q", t.Attempts, r.Report.Metadata, m)
		}
		m = r.Report.Metadata
		if fallback {
			t.WantFallback(r)
		}
		if !res[0].OK {
			t.Fatalf("attempt %d: race-metadata: %s", t.Attempts, res[0].Errno)
		}
		var rc helper.RaceCounts
		if err := json.Unmarshal([]byte(res[0].Data), &rc); err != nil {
			t.Fatalf("attempt %d: race-metadata data %q: %v", t.Attempts, res[0].Data, err)
		}
		c.Swaps += rc.Swaps
		if rc.Error != "" {
			c.Error = rc.Error
		}
		for call, outcomes := range rc.Calls {
			if c.Calls[call] == nil {
				c.Calls[call] = map[string]int{}
			}
			for k, v := range outcomes {
				c.Calls[call][k] += v
			}
		}
		if diff := changed(); diff != "" || ctime() != seen {
			msg := fmt.Sprintf("attempt %d: a call landed outside (%s; calls this launch: %v)", t.Attempts, cmp.Or(diff, "its ctime moved"), rc.Calls)
			if !t.Cfg().MeasureRaces {
				t.Fatalf("%s", msg)
			}
			// Measuring a planted bug's win rate: count the win, put the file back, race on.
			t.Wins++
			t.Errorf("%s", msg)
			if err := os.Chmod(outside, 0o640); err != nil {
				t.Fatalf("restoring the outside file: %v", err)
			}
			setTimes(t, outside, wfTime1)
			if err := unix.Setxattr(outside, "user.race", []byte("outside"), 0); err != nil && !errors.Is(err, unix.EOPNOTSUPP) {
				t.Fatalf("restoring the outside file: %v", err)
			}
			seen = ctime()
		}
		if m == "seccomp-deny" {
			break // every call is denied: another launch would prove no more
		}
	}
	t.Measured = t.Cfg().MeasureRaces // only a loop that ran to its end gives a rate
	t.Logf("%s: %d launches of %d calls each, %d swaps: %v", m, t.Attempts, metadataSwapCalls, c.Swaps, c.Calls)
	if c.Error != "" {
		t.Errorf("the swapper stopped: %s", c.Error)
	}
	if c.Swaps == 0 {
		t.Errorf("no exchange happened: the race proved nothing")
	}
	// The outside file, explicitly (the invariant snapshot compares the rest of the outside tree).
	if diff := changed(); diff != "" {
		t.Errorf("outside: %s", diff)
	}
	// Where the real directory is now: d, or alt when the last exchange left d the symlink.
	real := arena + "/d"
	if fi, err := os.Lstat(real); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		real = arena + "/alt"
	}
	allowed := map[string][]string{
		"mount-layer":  {"ok", "EROFS"},
		"supervisor":   {"ok", "EPERM"},
		"seccomp-deny": {"EPERM"},
	}[m]
	if allowed == nil {
		t.Fatalf("report.metadata %q, want mount-layer, supervisor or seccomp-deny", m)
	}
	for call, outcomes := range c.Calls {
		for k, v := range outcomes {
			noXattr := call == "setxattr" && (k == "EOPNOTSUPP" || k == "ENOTSUP")
			if !contains(allowed, k) && !noXattr {
				t.Errorf("%s: %s answered %s %d times; want only %s", m, call, k, v, strings.Join(allowed, " or "))
			}
		}
	}
	if m == "seccomp-deny" {
		t.Logf("note: seccomp-deny (the fallback before issue 15) denies every call, so the race is moot here; it is the supervisor's")
		return
	}
	if okTotal() == 0 {
		t.Errorf("%s: no call succeeded: the race never took the inside branch and proved nothing", m)
	}
	// Every change that reported success is on the worktree's file.
	if c.Calls["chmod"]["ok"] > 0 {
		if msg := wantModeTime(real+"/file", helper.MetaMode, time.Time{}, false); msg != "" {
			t.Errorf("chmod succeeded %d times, but %s", c.Calls["chmod"]["ok"], msg)
		}
	}
	if c.Calls["utimensat"]["ok"] > 0 {
		if _, mt, _ := statOf(real + "/file"); mt.Unix() != helper.MetaTime {
			t.Errorf("utimensat succeeded %d times, but the worktree file's mtime is %d", c.Calls["utimensat"]["ok"], mt.Unix())
		}
	}
	if c.Calls["setxattr"]["ok"] > 0 {
		if v := getxattr(real+"/file", "user.race"); v != "inside" {
			t.Errorf("setxattr succeeded %d times, but the worktree file's user.race is %q", c.Calls["setxattr"]["ok"], v)
		}
	}
}

func mustSymlink(t *T, target, link string) {
	if err := os.Symlink(target, link); err != nil {
		t.Fatalf("fixture: %v", err)
	}
}

// race runs t.Cfg().Attempts confine invocations while a goroutine keeps exchanging swap and alt (renameat2
// RENAME_EXCHANGE). Each invocation is `confine --worktree root -- helper create writeDir/marker-N`. outside lists
// the directories a write must never land in; they are checked after every attempt, so the first escape stops the
// case with its attempt number.
func race(t *T, swap, alt, root, writeDir string, outside []string) {
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	var swapErr error
	// With one CPU (the VM guests), a spinning swapper would take half of it from confine; it sleeps between
	// exchanges instead, which still flips the path many times during each confine start.
	pause := time.Duration(0)
	if runtime.NumCPU() == 1 {
		pause = 50 * time.Microsecond
	}
	// CONFORMANCE_SWAP_PAUSE overrides it, for profiling a race launch (issue 27: is the launch slow because
	// the swapper takes the CPU?). A measured win rate holds only for the pause it was measured with.
	if d, err := time.ParseDuration(os.Getenv("CONFORMANCE_SWAP_PAUSE")); err == nil {
		pause = d
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		runtime.LockOSThread()
		for !stop.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, swap, unix.AT_FDCWD, alt, unix.RENAME_EXCHANGE); err != nil {
				swapErr = err
				return
			}
			swaps.Add(1)
			if pause > 0 {
				time.Sleep(pause)
			}
		}
	}()
	defer func() { stop.Store(true); wg.Wait() }()

	var refused, written, nDenied, other, bwrapRefused, byPath int
	for i := 0; i < t.Cfg().Attempts; i++ {
		t.Attempts = i + 1
		marker := fmt.Sprintf("%s/marker-%d", writeDir, i)
		r := t.Confine([]string{"--worktree", root}, t.HelperArgv(opArg("create", marker, "x")), Opts{})
		switch {
		case r.Exit == 125 && r.Report != nil && r.Report.Outcome == "refused" && r.Report.Reason == "bad-root":
			refused++
		case t.Bwrap() && r.Exit == 125 && r.Report != nil && r.Report.Outcome == "refused" && r.Report.Reason == "backend-unavailable":
			// bwrap could not build the sandbox: nothing ran. bwrap is given each root as its validated descriptor
			// (/proc/self/fd/N); a failure to find the bind's source by path, or one that names an outside
			// directory, shows that bwrap turned the descriptor back into a path and used the path, which the
			// swapper controls.
			bwrapRefused++
			if evidence := bwrapPathEvidence(r.Report.Error, outside); evidence != "" {
				byPath++
				if byPath <= 3 {
					t.Logf("attempt %d: bwrap used the root's path, not its descriptor (%s): %s", t.Attempts, evidence, r.Report.Error)
				}
			}
		case r.Exit == 0 && r.Report != nil && r.Report.Outcome == "exec":
			res := t.helperResults("confine", r, 1)[0]
			if res.OK {
				written++
			} else if contains(denied, res.Errno) {
				nDenied++
			} else {
				other++
				if other <= 5 {
					t.Logf("attempt %d: write failed with %s", t.Attempts, res.Errno)
				}
			}
		default:
			other++
			if other <= 5 {
				t.Logf("attempt %d: exit %d, report %s, stderr %q", t.Attempts, r.Exit, r.ReportRaw, r.Stderr)
			}
		}
		for _, dir := range outside {
			if names, _ := readNames(dir); len(names) > 0 {
				if !t.Cfg().MeasureRaces {
					t.Fatalf("attempt %d: a write landed outside the writable set: %s/%v", t.Attempts, dir, names)
				}
				// Measuring a planted bug's win rate: count the escape, clear it away, race on.
				t.Wins++
				t.Errorf("attempt %d: a write landed outside the writable set: %s/%v", t.Attempts, dir, names)
				for _, n := range names {
					os.RemoveAll(filepath.Join(dir, n))
				}
				written-- // it was counted as a write that landed (inside)
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	t.Measured = t.Cfg().MeasureRaces // only a loop that ran to its end gives a rate
	if swapErr != nil {
		t.Fatalf("swapper: renameat2(RENAME_EXCHANGE): %v", swapErr)
	}
	t.Logf("%d attempts, %d swaps: %d refused (bad-root), %d confined writes landed inside, %d denied, %d other",
		t.Attempts, swaps.Load(), refused, written, nDenied, other)
	if t.Bwrap() {
		// bwrap realpath()s the /proc/self/fd/N it is given and binds the path, which the swapper controls: what it
		// bound may not be the validated root. confine's bwrap child checks each bind's device and inode before
		// anything runs, so such an attempt must end refused (counted here) and never in a write outside (above).
		t.Logf("bwrap: %d attempts refused (backend-unavailable, nothing ran): bwrap failed, or bound something else "+
			"than the validated root; %d of them show bwrap used the root's path", bwrapRefused, byPath)
	}
	if written+refused+nDenied+bwrapRefused == 0 {
		t.Errorf("no attempt ran or was refused cleanly: the race proved nothing")
	}
	if other > 0 {
		t.Errorf("%d attempts ended neither in a bad-root refusal nor in a confined run", other)
	}
	// Every write that reported success must be in the real directory (wherever the swap left it).
	if n := countMarkers(t, filepath.Dir(swap), writeDir, swap, alt); n != written {
		t.Errorf("%d writes reported success, %d markers found in the real directory", written, n)
	}
}

// bwrapPathEvidence says how a bwrap error shows that bwrap looked the bind's source up by path: it could not
// find the source (a descriptor cannot vanish), or it names one of the outside directories; "" when it shows
// neither (e.g. a destination that was swapped away: the destination is a path by design).
func bwrapPathEvidence(msg string, outside []string) string {
	for _, dir := range outside {
		if strings.Contains(msg, dir) {
			return "names " + dir
		}
	}
	if strings.Contains(msg, "Can't get type of source") {
		return "the source vanished"
	}
	return ""
}

func readNames(dir string) ([]string, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.Readdirnames(-1)
}

// countMarkers counts marker files in the real (non-symlink) one of swap/alt, resolved to writeDir's position.
func countMarkers(t *T, _ string, writeDir, swap, alt string) int {
	real := swap
	if fi, err := os.Lstat(swap); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		real = alt
	}
	rel, err := filepath.Rel(swap, writeDir)
	if err != nil || rel == ".." || (len(rel) > 2 && rel[:3] == "../") {
		return countIn(writeDir) // writeDir is not under the swapped path (gitfile-swap)
	}
	return countIn(filepath.Join(real, rel))
}

func countIn(dir string) int {
	names, _ := readNames(dir)
	n := 0
	for _, name := range names {
		if len(name) > 7 && name[:7] == "marker-" {
			n++
		}
	}
	return n
}
