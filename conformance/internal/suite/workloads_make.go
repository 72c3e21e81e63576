package suite

import (
	"fmt"
	"os"
	"strings"
)

// makeProject is a C project with a hand-written configure script (as autoconf's output is a shell script too: it
// probes the compiler, writes config.h and the Makefile from Makefile.in), a library, a program and a check.
var makeProject = map[string]string{
	"configure*": `#!/bin/sh
# A configure script of the kind autoconf writes: probe the compiler, record what was found, substitute.
set -e
CC=${CC:-cc}
CFLAGS=${CFLAGS:--O2}
printf 'checking whether %s works... ' "$CC"
printf 'int main(void) { return 0; }\n' > conftest.c
if $CC $CFLAGS -o conftest conftest.c >config.log 2>&1 && ./conftest; then echo yes; else echo no; exit 1; fi
rm -f conftest conftest.c
printf '#define WL_VERSION "1.0"\n#define WL_CC "%s"\n' "$CC" > config.h
sed -e "s|@CC@|$CC|g" -e "s|@CFLAGS@|$CFLAGS|g" Makefile.in > Makefile
echo "config.status: creating Makefile"
`,
	"Makefile.in": "CC = @CC@\nCFLAGS = @CFLAGS@\n\n" +
		"all: wl\n\n" +
		"wl: main.o wl.o\n\t$(CC) $(CFLAGS) -o $@ main.o wl.o\n\n" +
		"test_wl: test.o wl.o\n\t$(CC) $(CFLAGS) -o $@ test.o wl.o\n\n" +
		"%.o: %.c config.h wl.h\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n" +
		"check: test_wl\n\t./test_wl\n\n" +
		".PHONY: all check\n",
	"wl.h": "int wl_answer(int a, int b);\n",
	"wl.c": "#include \"wl.h\"\nint wl_answer(int a, int b) { return a * b; }\n",
	"main.c": "#include <stdio.h>\n#include \"config.h\"\n#include \"wl.h\"\n" +
		"int main(void) { printf(\"wl %s says %d\\n\", WL_VERSION, wl_answer(6, 7)); return 0; }\n",
	"test.c": `#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "wl.h"
static int pass, fail;
static void check(const char *name, int ok) { printf("%s: %s\n", ok ? "PASS" : "FAIL", name); ok ? pass++ : fail++; }
int main(void) {
	char tmpl[] = "/tmp/wl-check-XXXXXX";
	int fd = mkstemp(tmpl);
	check("answer", wl_answer(6, 7) == 42);
	check("zero", wl_answer(0, 9) == 0);
	check("mkstemp in /tmp", fd >= 0 && write(fd, "x", 1) == 1 && unlink(tmpl) == 0);
	printf("# PASS: %d, FAIL: %d\n", pass, fail);
	return fail ? 1 : 0;
}
`,
}

var makeWorkload = workload{
	name:  "configure-make-check",
	title: "./configure, make and make check of a C project: the program runs and the checks match",
	rationale: "The autotools sequence: configure compiles and runs a probe program and writes config.h and the " +
		"Makefile, make compiles objects and links (the compiler's temporary files in /tmp, the linker's output " +
		"made executable), make check builds and runs the test program. The project's configure is hand-written " +
		"(as autoconf's output is a shell script; autoconf itself is not needed). The outcome is the configure " +
		"result, config.h, the program's output (run by the runner), its mode, and every check line.",
	effect:  "`./wl` prints `wl 1.0 says 42`; 3 checks PASS",
	tools:   []string{"cc", "make"},
	project: func(t *T, dir string) { writeTree(t, dir, makeProject) },
	script:  "./configure && make && make check",
	observe: func(t *T, dir string, r Run) ([]string, error) {
		cfg, err := os.ReadFile(dir + "/config.h")
		if err != nil {
			return nil, fmt.Errorf("no config.h: %v", err)
		}
		st, err := os.Stat(dir + "/wl")
		if err != nil || st.Mode().Perm()&0o111 == 0 {
			return nil, fmt.Errorf("./wl was not built executable: %v", err)
		}
		out := t.Unconfined([]string{dir + "/wl"}, Opts{Dir: dir})
		if out.Exit != 0 {
			return nil, fmt.Errorf("./wl does not run (exit %d)", out.Exit)
		}
		checks := matchingLines(r.Stdout, "PASS", "FAIL", "checking whether")
		if !contains(checks, "# PASS: 3, FAIL: 0") {
			return nil, fmt.Errorf("make check did not pass 3: %q", checks)
		}
		return append([]string{"config.h: " + strings.ReplaceAll(strings.TrimSpace(string(cfg)), "\n", " | "),
			fmt.Sprintf("wl: mode %04o, prints %s", st.Mode().Perm(), strings.TrimSpace(out.Stdout))}, checks...), nil
	},
}

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
