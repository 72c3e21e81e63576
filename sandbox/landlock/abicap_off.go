//go:build !confine_abicap

package landlock

// capABI is the identity in every build but the confine_abicap test build (abicap_on.go): the launcher acts as
// the ABI the kernel reports, and no environment variable or flag can lower it.
func capABI(abi int) (int, error) { return abi, nil }
