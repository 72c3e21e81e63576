// Command launchbench times whole-process launches of several commands, interleaved round by round so that a
// noisy machine slows them alike, and prints per-launch medians and the ratios asked for. It is the engine of
// scripts/bench-launcher.sh (make sandbox-bench), not part of the launcher.
//
//	launchbench [-runs N] [-rounds R] [-uid U -gid G] [-ratio a/b]... name=CMD [name=CMD]...
//
// CMD is split on spaces. Wall time is measured around fork+exec+wait; CPU time is the user+system time that
// wait4 reports for the child, which includes the descendants it reaped (confine's layered child, bwrap's
// command). Units: microseconds per launch.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

type ratios []string

func (r *ratios) String() string     { return strings.Join(*r, ",") }
func (r *ratios) Set(v string) error { *r = append(*r, v); return nil }

func main() {
	runs := flag.Int("runs", 40, "launches per variant per round")
	rounds := flag.Int("rounds", 5, "rounds; the median round is reported")
	uid := flag.Int("uid", -1, "run the commands as this uid (needs root)")
	gid := flag.Int("gid", -1, "and this gid")
	var want ratios
	flag.Var(&want, "ratio", "print the ratio a/b of two variants (repeatable)")
	flag.Parse()
	type variant struct {
		name      string
		argv      []string
		wall, cpu []float64 // per round, µs per launch
	}
	var vs []*variant
	for _, arg := range flag.Args() {
		name, cmd, ok := strings.Cut(arg, "=")
		if !ok || cmd == "" {
			fmt.Fprintf(os.Stderr, "launchbench: want name=CMD, got %q\n", arg)
			os.Exit(2)
		}
		vs = append(vs, &variant{name: name, argv: strings.Fields(cmd)})
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		panic(err)
	}
	for r := 0; r < *rounds; r++ {
		for _, v := range vs {
			var wall, cpu time.Duration
			for i := 0; i < *runs; i++ {
				cmd := exec.Command(v.argv[0], v.argv[1:]...)
				cmd.Stdout, cmd.Stderr = null, null
				if *uid >= 0 {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{
						Uid: uint32(*uid), Gid: uint32(*gid)}}
				}
				t0 := time.Now()
				if err := cmd.Run(); err != nil {
					fmt.Fprintf(os.Stderr, "launchbench: %s: %v\n", v.name, err)
					os.Exit(1)
				}
				wall += time.Since(t0)
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			v.wall = append(v.wall, float64(wall.Microseconds())/float64(*runs))
			v.cpu = append(v.cpu, float64(cpu.Microseconds())/float64(*runs))
		}
	}
	med := map[string][2]float64{}
	for _, v := range vs {
		slices.Sort(v.wall)
		slices.Sort(v.cpu)
		m := [2]float64{v.wall[len(v.wall)/2], v.cpu[len(v.cpu)/2]}
		med[v.name] = m
		fmt.Printf("  %-10s %9.1f us/launch wall %9.1f us/launch cpu\n", v.name, m[0], m[1])
	}
	for _, r := range want {
		a, b, _ := strings.Cut(r, "/")
		ma, oka := med[a]
		mb, okb := med[b]
		if !oka || !okb {
			continue
		}
		fmt.Printf("  %-20s %6.2fx wall %6.2fx cpu\n", r, ma[0]/mb[0], ma[1]/mb[1])
	}
}
