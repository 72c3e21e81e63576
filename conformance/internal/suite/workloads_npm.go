package suite

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"time"
)

// npmDep is the dependency's files, as `npm pack` puts them in its tarball (under package/); the star marks an
// executable (writeTree's convention).
var npmDep = map[string]string{
	"package.json":  `{"name":"wl-greet","version":"1.0.0","bin":{"wl-greet":"bin/greet.js"},"main":"index.js"}` + "\n",
	"index.js":      "exports.greet = (n) => \"hello, \" + n;\n",
	"bin/greet.js*": "#!/usr/bin/env node\nconsole.log(require(\"..\").greet(\"build\"));\n",
}

// npmApp is the project: a build script that uses the dependency's bin and writes dist/app.js, and three tests
// that node --test finds (test/*.test.js).
var npmApp = map[string]string{
	"package.json": `{"name":"wl-app","version":"1.0.0","private":true,` +
		`"scripts":{"build":"wl-greet > greeting.txt && node build.js","test":"node --test"},` +
		`"dependencies":{"wl-greet":"file:vendor/wl-greet-1.0.0.tgz"}}` + "\n",
	"build.js": `const fs = require("fs");
const { greet } = require("wl-greet");
fs.mkdirSync("dist", { recursive: true });
fs.writeFileSync("dist/app.js", "console.log(" + JSON.stringify(greet("app")) + ");\n");
`,
	"test/app.test.js": `const test = require("node:test");
const assert = require("node:assert");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { greet } = require("wl-greet");

test("greets", () => assert.strictEqual(greet("x"), "hello, x"));
test("built", () => assert.ok(fs.existsSync("dist/app.js")));
test("tmpdir", () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "wl-"));
  fs.writeFileSync(path.join(d, "f"), "x");
  fs.rmSync(d, { recursive: true });
});
`,
}

// npmTarball is npmDep as a gzipped tar (package/…, fixed times and owners), and its lock-file integrity
// ("sha512-" and the base64 SHA-512 of the tarball's bytes).
func npmTarball() ([]byte, string, error) {
	var raw bytes.Buffer
	gz := gzip.NewWriter(&raw)
	tw := tar.NewWriter(gz)
	for _, name := range []string{"package.json", "index.js", "bin/greet.js*"} {
		body, mode := npmDep[name], int64(0o644)
		if strings.HasSuffix(name, "*") {
			name, mode = strings.TrimSuffix(name, "*"), 0o755
		}
		h := &tar.Header{Name: "package/" + name, Mode: mode, Size: int64(len(body)), ModTime: time.Unix(499162500, 0),
			Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	if err := gz.Close(); err != nil {
		return nil, "", err
	}
	sum := sha512.Sum512(raw.Bytes())
	return raw.Bytes(), "sha512-" + base64.StdEncoding.EncodeToString(sum[:]), nil
}

// npmLock is package-lock.json (lockfileVersion 3) for npmApp with the tarball's integrity: npm ci installs from
// it without asking a registry.
func npmLock(integrity string) string {
	return `{"name":"wl-app","version":"1.0.0","lockfileVersion":3,"requires":true,"packages":{` +
		`"":{"name":"wl-app","version":"1.0.0","dependencies":{"wl-greet":"file:vendor/wl-greet-1.0.0.tgz"}},` +
		`"node_modules/wl-greet":{"version":"1.0.0","resolved":"file:vendor/wl-greet-1.0.0.tgz",` +
		`"integrity":"` + integrity + `","bin":{"wl-greet":"bin/greet.js"}}}}` + "\n"
}

var npmWorkload = workload{
	name:  "npm-ci-build-test",
	title: "npm ci from a lock file, a build script and node --test: the installed package, the build output and the test counts match",
	rationale: "npm ci removes node_modules, extracts each locked package through its content cache (~/.npm/_cacache), " +
		"checks its integrity, links each bin into node_modules/.bin and makes it executable, then runs the " +
		"project's scripts. The one dependency is a tarball in the project (`file:vendor/…tgz`, with its " +
		"integrity in package-lock.json), so nothing is fetched (npm_config_offline); HOME, and so npm's cache, " +
		"is in the project, so `--profile npm` is not needed. The script runs `npm ci`, `npm run build` (the " +
		"dependency's bin, then a build script that writes dist/app.js) and `npm test` (node --test, three " +
		"tests, one in os.tmpdir()). The outcome is the installed version, the .bin link and its mode, the build " +
		"output (dist/app.js run by the runner), and the test counts.",
	effect: "node_modules/wl-greet 1.0.0 with an executable .bin/wl-greet; dist/app.js prints `hello, app`; 3 tests pass",
	tools:  []string{"npm", "node"},
	project: func(t *T, dir string) {
		tgz, integrity, err := npmTarball()
		if err != nil {
			t.Fatalf("fixture: tarball: %v", err)
		}
		writeTree(t, dir, npmApp)
		t.WriteFile(dir+"/vendor/wl-greet-1.0.0.tgz", string(tgz), 0o644)
		t.WriteFile(dir+"/package-lock.json", npmLock(integrity), 0o644)
	},
	script: "npm ci && npm run build && npm test",
	env: func(t *T, dir string) []string {
		return wlEnv(dir, "npm_config_offline=true", "npm_config_audit=false", "npm_config_fund=false",
			"npm_config_update_notifier=false")
	},
	observe: func(t *T, dir string, r Run) ([]string, error) {
		var pkg struct{ Version string }
		if err := readJSON(dir+"/node_modules/wl-greet/package.json", &pkg); err != nil {
			return nil, fmt.Errorf("wl-greet is not installed: %v", err)
		}
		bin := dir + "/node_modules/.bin/wl-greet"
		link, _ := os.Readlink(bin)
		st, err := os.Stat(bin)
		if err != nil {
			return nil, fmt.Errorf("no .bin/wl-greet: %v", err)
		}
		greeting, _ := os.ReadFile(dir + "/greeting.txt")
		app := t.Unconfined([]string{"node", dir + "/dist/app.js"}, Opts{Dir: dir})
		if app.Exit != 0 {
			return nil, fmt.Errorf("dist/app.js does not run (exit %d): %s", app.Exit, firstLine(app.Stderr))
		}
		counts := matchingLines(r.Stdout, "# tests", "# pass", "# fail")
		if !contains(counts, "# pass 3") {
			return nil, fmt.Errorf("node --test did not pass 3 tests: %q", counts)
		}
		return append([]string{"wl-greet " + pkg.Version, fmt.Sprintf(".bin/wl-greet -> %s, mode %04o", link, st.Mode().Perm()),
			"greeting.txt: " + strings.TrimSpace(string(greeting)), "dist/app.js: " + strings.TrimSpace(app.Stdout)}, counts...), nil
	},
}
