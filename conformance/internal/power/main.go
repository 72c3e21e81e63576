package power

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/confine-dev/confine/conformance/internal/events"
)

// Merge returns base with each of the measured rates added, replacing base's rate of the same case, mutant,
// where, arch, backend and user; sorted by case, mutant, where, arch, backend, user.
func Merge(base *Rates, measured []Rate) *Rates {
	key := func(r Rate) string {
		return r.Case + "\x00" + r.Mutant + "\x00" + r.Where + "\x00" + r.Arch + "\x00" + r.Backend + "\x00" + r.User
	}
	out := &Rates{Schema: Schema}
	if base != nil {
		out.Comment = base.Comment
	}
	seen := map[string]int{}
	if base != nil {
		for _, r := range base.Rates {
			seen[key(r)] = len(out.Rates)
			out.Rates = append(out.Rates, r)
		}
	}
	for _, r := range measured {
		if i, ok := seen[key(r)]; ok {
			out.Rates[i] = r
			continue
		}
		seen[key(r)] = len(out.Rates)
		out.Rates = append(out.Rates, r)
	}
	sort.SliceStable(out.Rates, func(i, j int) bool { return key(out.Rates[i]) < key(out.Rates[j]) })
	return out
}

// FromEvents returns the measured rates in one event stream of a measuring run (--measure-races; a host run's
// --json output, or a VM result's .out, whose passes are told apart): one per pass and race case that ran
// attempts, keyed on the pass's start event (where, arch, backend, user), for mutant.
func FromEvents(evs []events.Event, mutant string) []Rate {
	env := map[string]*events.Env{}
	var out []Rate
	for _, e := range evs {
		switch {
		case e.Action == events.Start && e.Env != nil:
			env[e.Pass] = e.Env
		case e.Test != "" && e.Measured && e.Attempts > 0 && (e.Action == events.Pass || e.Action == events.Fail):
			r := Rate{Case: e.Test, Mutant: mutant, Attempts: e.Attempts, Wins: e.Wins, Measured: time.Now().UTC().Format("2006-01-02")}
			if en := env[e.Pass]; en != nil {
				r.Where, r.Backend, r.User = en.RaceWhere, en.Backend, en.User
				r.Arch = map[string]string{"x86_64": "amd64", "aarch64": "arm64"}[en.Arch]
				if r.Arch == "" {
					r.Arch = en.Arch
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// Main is `confine-conformance race-rates --mutant NAME [--base FILE] [--out FILE] EVENTS...`: it takes the race
// cases' wins and attempts from measuring runs' event streams (--measure-races --json output, or VM results'
// .out files), merges them into --base (e.g. conformance/race-rates.json) and writes the result to --out (stdout by
// default), then prints, per rate, the attempts the matrix would plan from it. Exit 0, or 2 on bad input.
func Main(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("confine-conformance race-rates", flag.ContinueOnError)
	fs.SetOutput(stderr)
	baseFile := fs.String("base", "", "the rates file to merge into (e.g. conformance/race-rates.json)")
	out := fs.String("out", "", "write the merged file here (default: stdout)")
	mutant := fs.String("mutant", "", "the planted bug the measured confine carried (conformance/mutants/NAME.patch; required)")
	target := fs.Float64("power", Target, "the power the printed attempt counts reach")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int { fmt.Fprintf(stderr, "confine-conformance race-rates: %v\n", err); return 2 }
	if *mutant == "" || fs.NArg() == 0 {
		return fail(fmt.Errorf("usage: race-rates --mutant NAME [--base FILE] [--out FILE] EVENTS..."))
	}
	var base *Rates
	if *baseFile != "" {
		var err error
		if base, err = Load(*baseFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(err)
		}
	}
	var measured []Rate
	for _, file := range fs.Args() {
		f, err := os.Open(file)
		if err != nil {
			return fail(err)
		}
		evs, err := events.Read(f)
		f.Close()
		if err != nil {
			return fail(fmt.Errorf("%s: %w", file, err))
		}
		got := FromEvents(evs, *mutant)
		if len(got) == 0 {
			return fail(fmt.Errorf("%s: no race case counted its wins there (run with --measure-races --json)", file))
		}
		measured = append(measured, got...)
	}
	m := Merge(base, measured)
	b, _ := json.MarshalIndent(m, "", "  ")
	b = append(b, '\n')
	if *out == "" {
		stdout.Write(b)
	} else if err := os.WriteFile(*out, b, 0o644); err != nil {
		return fail(err)
	}
	for _, r := range measured {
		p := WilsonLower(r.Wins, r.Attempts)
		line := fmt.Sprintf("%-42s %-22s %s %s %s %s: %d wins of %d (%.3g; %.3g at the 95 %% lower bound)",
			r.Case, r.Mutant, r.Where, r.Arch, r.Backend, r.User, r.Wins, r.Attempts, float64(r.Wins)/float64(r.Attempts), p)
		if n := Attempts(p, *target); n > 0 {
			line += fmt.Sprintf(": %d attempts reach %s", n, Percent(*target))
		} else {
			line += ": never won, no attempt count can be planned from it"
		}
		fmt.Fprintln(stderr, line)
	}
	return 0
}
