package suite

import (
	"fmt"
	"os"
	"strings"
)

// cargoProject is a crate with a library, its unit tests and a binary; no dependencies (nothing to fetch).
var cargoProject = map[string]string{
	"Cargo.toml": "[package]\nname = \"wl\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
	"src/lib.rs": `pub fn answer(a: i32, b: i32) -> i32 { a * b }

#[cfg(test)]
mod tests {
    #[test]
    fn answer() { assert_eq!(super::answer(6, 7), 42); }
    #[test]
    fn temp_dir() {
        let p = std::env::temp_dir().join(format!("wl-cargo-{}", std::process::id()));
        std::fs::write(&p, "x").unwrap();
        std::fs::remove_file(&p).unwrap();
    }
}
`,
	"src/main.rs": "fn main() { println!(\"wl says {}\", wl::answer(6, 7)); }\n",
}

var cargoWorkload = workload{
	name:  "cargo-build-test",
	title: "cargo build and cargo test of a crate: the binary runs and the test results match",
	rationale: "cargo locks and fills target/ (fingerprints, incremental state, dep-info), writes " +
		"Cargo.lock, and runs the test harness it links. The crate has no dependencies and the runs are " +
		"--offline; CARGO_HOME is in the project (HOME is), so `--profile cargo` is not needed, and RUSTUP_HOME, " +
		"where a rustup install keeps its toolchains, stays the runner's (read only). The outcome is the binary's " +
		"output (run by the runner), Cargo.lock's package, and the test result lines without their times.",
	effect:  "target/debug/wl prints `wl says 42`; `test result: ok. 2 passed`",
	tools:   []string{"cargo"},
	project: func(t *T, dir string) { writeTree(t, dir, cargoProject) },
	script:  "cargo build --offline -q && cargo test --offline -q",
	env: func(t *T, dir string) []string {
		rustup := os.Getenv("RUSTUP_HOME")
		if home, err := os.UserHomeDir(); rustup == "" && err == nil {
			rustup = home + "/.rustup"
		}
		return wlEnv(dir, "CARGO_HOME="+dir+"/.home/.cargo", "RUSTUP_HOME="+rustup, "CARGO_TERM_COLOR=never")
	},
	observe: func(t *T, dir string, r Run) ([]string, error) {
		out := t.Unconfined([]string{dir + "/target/debug/wl"}, Opts{Dir: dir})
		if out.Exit != 0 {
			return nil, fmt.Errorf("target/debug/wl does not run (exit %d)", out.Exit)
		}
		lock, err := os.ReadFile(dir + "/Cargo.lock")
		if err != nil || !strings.Contains(string(lock), "name = \"wl\"") {
			return nil, fmt.Errorf("no Cargo.lock naming wl: %v", err)
		}
		var results []string
		for _, l := range matchingLines(r.Stdout, "test result:") {
			l, _, _ = strings.Cut(l, "; finished in")
			results = append(results, l)
		}
		if len(results) == 0 || !strings.HasPrefix(results[0], "test result: ok. 2 passed") {
			return nil, fmt.Errorf("cargo test did not pass 2 tests: %q", results)
		}
		return append([]string{"wl: " + strings.TrimSpace(out.Stdout)}, results...), nil
	},
}
