// Package guest is the supervisor that runs as /init inside the VM: it mounts the filesystems, runs the payload as a
// child with a timeout, once per pass of the boot, streams each pass's stdout over the console protocol, reports
// each pass's result and powers off.
package guest

import "time"

// ConfigPath is where the host puts the run configuration in the initramfs.
const ConfigPath = "/vm/run.json"

// Config is the host -> guest run configuration (JSON at ConfigPath).
type Config struct {
	Argv    []string      `json:"argv"`    // payload command, argv[0] an absolute guest path
	Timeout time.Duration `json:"timeout"` // guest-side timeout of each pass, nanoseconds
	// Passes are the payload's runs in this boot, in order, one after the other: a kernel's manifest entries
	// that differ only in what the payload is told (an ABI cap, a host emulation) share one boot (issue 27).
	Passes []Pass `json:"passes"`
}

// Pass is one run of the payload: its own markers and environment.
type Pass struct {
	Nonce string   `json:"nonce"` // per-pass marker nonce, [0-9a-f]+: the host parses each pass's console records apart
	Env   []string `json:"env"`   // KEY=VALUE pairs added to the payload's environment
}
