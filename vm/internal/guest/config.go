// Package guest is the supervisor that runs as /init inside the VM: it mounts the filesystems, runs the payload as a
// child with a timeout, streams its stdout over the console protocol, reports the result and powers off.
package guest

import "time"

// ConfigPath is where the host puts the run configuration in the initramfs.
const ConfigPath = "/vm/run.json"

// Config is the host -> guest run configuration (JSON at ConfigPath).
type Config struct {
	Nonce   string        `json:"nonce"`   // per-run marker nonce, [0-9a-f]+
	Argv    []string      `json:"argv"`    // payload command, argv[0] an absolute guest path
	Env     []string      `json:"env"`     // KEY=VALUE pairs added to the payload's environment
	Timeout time.Duration `json:"timeout"` // guest-side payload timeout, nanoseconds
}
