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
