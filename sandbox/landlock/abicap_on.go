//go:build confine_abicap

package landlock

import (
	"errors"
	"os"
	"strconv"
)

// ABICapEnv names the variable a confine_abicap test build reads: CONFINE_TEST_ABI_CAP=N makes confine act as
// Landlock ABI N on a kernel with a newer one, so the conformance matrix runs every ABI's branch on real kernels.
// The shipped launcher is built without the tag (Bazel sets no gotags), so this file is not in it: see
// abicap_off.go.
const ABICapEnv = "CONFINE_TEST_ABI_CAP"

// capABI returns min(abi, N) when ABICapEnv is N >= 1, abi when it is unset, and an error for any other value (a
// test that asked for a cap must not silently run uncapped).
func capABI(abi int) (int, error) {
	s, ok := os.LookupEnv(ABICapEnv)
	if !ok {
		return abi, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, errors.New(ABICapEnv + "=" + strconv.Quote(s) + ": want an ABI >= 1")
	}
	return min(abi, n), nil
}
