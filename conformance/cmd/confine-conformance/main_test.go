package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The second pass runs from /: every path flag it is given must be absolute, in each of the flag package's forms.
func TestAbsPaths(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	got, err := absPaths([]string{"--confine", "out/confine", "-expect=conformance/expected.yaml", "--json",
		"--case", "a/b", "--scratch", "/var/tmp", "-race-rates", "r.json", "--plan="})
	require.NoError(t, err)
	assert.Equal(t, []string{"--confine", filepath.Join(wd, "out/confine"), "--expect=" + filepath.Join(wd, "conformance/expected.yaml"),
		"--json", "--case", "a/b", "--scratch", "/var/tmp", "-race-rates", filepath.Join(wd, "r.json"), "--plan="}, got)
}
