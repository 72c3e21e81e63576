package suite

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// wheelFiles are the members of wlpkg-1.0-py3-none-any.whl but its RECORD, in order: a package with a console
// script, as `pip wheel` of a pure-Python project makes it.
var wheelFiles = [][2]string{
	{"wlpkg/__init__.py", "def answer():\n    return 42\n"},
	{"wlpkg/cli.py", "from wlpkg import answer\n\n\ndef main():\n    print(\"wlpkg\", answer())\n"},
	{"wlpkg-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: wlpkg\nVersion: 1.0\nSummary: confine conformance\n"},
	{"wlpkg-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: confine-conformance\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	{"wlpkg-1.0.dist-info/entry_points.txt", "[console_scripts]\nwlpkg = wlpkg.cli:main\n"},
	{"wlpkg-1.0.dist-info/top_level.txt", "wlpkg\n"},
}

// buildWheel returns the wheel's bytes: wheelFiles and a RECORD with each member's urlsafe, unpadded SHA-256 and
// size (PEP 376/427), so that pip installs it with --no-index and without setuptools or wheel.
func buildWheel() ([]byte, error) {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	var record strings.Builder
	for _, f := range wheelFiles {
		w, err := zw.Create(f[0])
		if err != nil {
			return nil, err
		}
		if _, err := w.Write([]byte(f[1])); err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(f[1]))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f[0], base64.RawURLEncoding.EncodeToString(sum[:]), len(f[1]))
	}
	record.WriteString("wlpkg-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("wlpkg-1.0.dist-info/RECORD")
	if err != nil {
		return nil, err
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// wlPython is the python3 a Python workload runs (pythonWith), kept by its ready check for its env.
var wlPython = map[string]string{}

var venvWorkload = workload{
	name:  "python-venv-pip-wheel",
	title: "python3 -m venv and a pip install of a local wheel: the wheel is installed in the venv and its console script runs",
	rationale: "A virtual environment is the first thing a Python project makes: venv copies or links the " +
		"interpreter and writes pyvenv.cfg, ensurepip bootstraps pip into it (run as a step of its own, as " +
		"venv runs it, so that its errors are seen), and pip then unpacks a wheel, compiles " +
		"its modules, writes a console script with the venv's interpreter in its #! line and makes it executable, " +
		"and records every file. The wheel is made by the runner (a zip with a RECORD: no setuptools, no network), " +
		"installed with `pip install --no-index --no-deps`; HOME, and so pip's cache, is in the project, so " +
		"`--profile pip` is not needed. The outcome is the installed distribution (dist-info, INSTALLER), the " +
		"console script's output and its #! line, and where the package is imported from, each read by the " +
		"runner after the run.",
	effect: "`.venv/bin/wlpkg` prints `wlpkg 42`; wlpkg-1.0.dist-info in the venv, installed by pip",
	tools:  []string{"python3"},
	ready: func(t *T) string {
		py, why := pythonWith(t, "venv", "ensurepip")
		if py == "" {
			return "requires a python3 with venv and ensurepip (Debian: python3-venv): " + why
		}
		wlPython["venv"] = py
		return ""
	},
	project: func(t *T, dir string) {
		whl, err := buildWheel()
		if err != nil {
			t.Fatalf("fixture: wheel: %v", err)
		}
		t.WriteFile(dir+"/dist/wlpkg-1.0-py3-none-any.whl", string(whl), 0o644)
	},
	// venv's own pip bootstrap, run as a step of its own: venv swallows ensurepip's output, so a failure there
	// would say only "returned non-zero exit status 1".
	script: `"$PY" -m venv --without-pip .venv && .venv/bin/python -m ensurepip --default-pip >/dev/null && ` +
		`.venv/bin/python -m pip install -q --no-index --no-deps --disable-pip-version-check ` +
		`dist/wlpkg-1.0-py3-none-any.whl && .venv/bin/wlpkg`,
	env: func(t *T, dir string) []string {
		return wlEnv(dir, "PY="+wlPython["venv"], "PIP_CONFIG_FILE=/dev/null")
	},
	observe: func(t *T, dir string, r Run) ([]string, error) {
		infos, _ := filepath.Glob(dir + "/.venv/lib/python3*/site-packages/wlpkg-1.0.dist-info")
		if len(infos) != 1 {
			return nil, fmt.Errorf("no wlpkg-1.0.dist-info in the venv's site-packages")
		}
		installer, _ := os.ReadFile(infos[0] + "/INSTALLER")
		script, err := os.ReadFile(dir + "/.venv/bin/wlpkg")
		if err != nil {
			return nil, fmt.Errorf("no console script: %v", err)
		}
		first, _, _ := strings.Cut(string(script), "\n")
		shebang := strings.Replace(first, dir, "DIR", 1)
		cli := t.Unconfined([]string{dir + "/.venv/bin/wlpkg"}, Opts{Dir: dir, Env: pyEnv()})
		imp := t.Unconfined([]string{dir + "/.venv/bin/python", "-c", "import sys, wlpkg; print(wlpkg.__file__.startswith(sys.prefix + '/'))"},
			Opts{Dir: "/", Env: pyEnv()})
		if cli.Exit != 0 || imp.Exit != 0 {
			return nil, fmt.Errorf("the installed package does not run (exit %d, %d): %s", cli.Exit, imp.Exit, firstLine(cli.Stderr+imp.Stderr))
		}
		return []string{"installed by " + strings.TrimSpace(string(installer)), "console script: " + shebang,
			"wlpkg: " + strings.TrimSpace(cli.Stdout), "imported from the venv: " + strings.TrimSpace(imp.Stdout),
			"stdout: " + strings.TrimSpace(r.Stdout)}, nil
	},
}

// pytestProject is a test module with a process pool (POSIX semaphores in /dev/shm), a multiprocessing.Lock and
// pytest's tmp_path (under /tmp/pytest-of-USER).
const pytestProject = `import concurrent.futures
import multiprocessing


def square(x):
    return x * x


def test_pool():
    with concurrent.futures.ProcessPoolExecutor(max_workers=2) as pool:
        assert sum(pool.map(square, range(10))) == 285


def test_lock():
    lock = multiprocessing.Lock()
    with lock:
        pass


def test_tmp_path(tmp_path):
    (tmp_path / "f").write_text("x")
    assert (tmp_path / "f").read_text() == "x"
`

// pytestSummary is pytest's last line without its time: "3 passed", "1 failed, 2 passed".
var pytestSummary = regexp.MustCompile(`\d+ (passed|failed|skipped|errors?|xfailed|xpassed|warnings?)(, \d+ \w+)*`)

var pytestWorkload = workload{
	name:  "pytest-process-pool",
	title: "pytest with a process pool, a multiprocessing lock and tmp_path: the same verdicts as unconfined",
	rationale: "pytest writes its cache (.pytest_cache) in the project, makes tmp_path under " +
		"/tmp/pytest-of-USER, and the code under test forks a ProcessPoolExecutor, whose queues need POSIX " +
		"semaphores in /dev/shm (a private tmpfs with the mount layer and under bwrap; the host's, granted, in " +
		"the supervisor). The script runs `python3 -m pytest -v` on three tests; the outcome is each test's " +
		"verdict and the summary without its time; pytest must also have written its cache " +
		"(.pytest_cache/v/cache/nodeids).",
	effect: "3 passed; .pytest_cache written",
	tools:  []string{"python3"},
	ready: func(t *T) string {
		py, why := pythonWith(t, "pytest", "concurrent.futures", "multiprocessing")
		if py == "" {
			return "requires pytest (Debian: python3-pytest; scripts/sandbox-deps.sh): " + why
		}
		wlPython["pytest"] = py
		return ""
	},
	project: func(t *T, dir string) { t.WriteFile(dir+"/tests/test_pool.py", pytestProject, 0o644) },
	script:  `"$PY" -m pytest -v -p no:randomly tests`,
	env: func(t *T, dir string) []string {
		return wlEnv(dir, "PY="+wlPython["pytest"], "PYTHONDONTWRITEBYTECODE=1", "PYTEST_ADDOPTS=", "PY_COLORS=0")
	},
	observe: func(t *T, dir string, r Run) ([]string, error) {
		verdicts := matchingLines(r.Stdout, " PASSED", " FAILED", " ERROR", " SKIPPED")
		for i, v := range verdicts {
			verdicts[i] = strings.TrimSpace(regexp.MustCompile(`\s+\[\s*\d+%\]$`).ReplaceAllString(v, ""))
		}
		summary := pytestSummary.FindString(lastLine(r.Stdout))
		if summary != "3 passed" {
			return nil, fmt.Errorf("pytest says %q: %s", summary, lastLine(r.Stdout))
		}
		if !Exists(dir + "/.pytest_cache/v/cache/nodeids") {
			return nil, fmt.Errorf("pytest left no .pytest_cache/v/cache/nodeids")
		}
		return append(verdicts, "summary: "+summary), nil
	},
}
