// Command abiprobe is the VM runner's probe payload: it prints the Landlock ABI the kernel reports, as one JSON line
// {"landlock":"available","abi":6}, and exits 1 if that differs from what the runner expects (VM_EXPECTED_LANDLOCK
// and VM_EXPECTED_ABI, from vm/kernels.json). Build it static (CGO_ENABLED=0) for the guest arch.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/confine-dev/confine/vm/internal/landlockabi"
)

func main() {
	state, abi := landlockabi.Probe()
	b, _ := json.Marshal(map[string]any{"landlock": state, "abi": abi, "kernel_id": os.Getenv("VM_KERNEL_ID")})
	fmt.Println(string(b))
	want, wantABI := os.Getenv("VM_EXPECTED_LANDLOCK"), os.Getenv("VM_EXPECTED_ABI")
	if want == "" {
		return // not under the runner, or a --kernel PATH with no expectation
	}
	if got := fmt.Sprint(abi); state != want || got != wantABI {
		fmt.Fprintf(os.Stderr, "abiprobe: kernel reports %s/%d, expected %s/%s\n", state, abi, want, wantABI)
		os.Exit(1)
	}
}
