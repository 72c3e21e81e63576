package vm

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestManifestLoads(t *testing.T) {
	m, err := Load()
	require.NoError(t, err)
	byID := map[string]Kernel{}
	for _, k := range m.Kernels {
		byID[k.ID] = k
	}
	// The matrix the issue asks for: amd64 5.10 -> 7.3, arm64 5.10, 6.1, 6.12, 7.0, 7.3, and a disabled entry.
	for _, id := range []string{"5.10-amd64", "6.1-amd64", "6.12-amd64", "6.16-amd64", "6.17-amd64", "6.18-amd64",
		"6.19-amd64", "7.0-amd64", "7.2-amd64", "7.3-amd64", "5.10-arm64", "6.1-arm64", "6.12-arm64", "7.0-arm64", "7.3-arm64"} {
		assert.Contains(t, byID, id)
	}
	d := byID["6.12-amd64-disabled"]
	assert.Equal(t, LandlockDisabled, d.Landlock)
	assert.Contains(t, d.Cmdline, "lsm=")
	assert.NotContains(t, d.Cmdline, "landlock")
	assert.Equal(t, LandlockAbsent, byID["5.10-amd64"].Landlock, "Debian 5.10 has no CONFIG_SECURITY_LANDLOCK")
	for _, k := range m.Kernels {
		// From 6.19 on the image is in linux-binary-*, before that in linux-image-*.
		var major, minor int
		_, err := fmt.Sscanf(k.ID, "%d.%d-", &major, &minor)
		require.NoError(t, err, k.ID)
		newer := major > 6 || (major == 6 && minor >= 19)
		assert.Equal(t, newer, strings.HasPrefix(k.Package, "linux-binary-"), k.ID)
		assert.True(t, strings.HasSuffix(k.Package, "-"+k.Arch), "%s: package %s is not for %s", k.ID, k.Package, k.Arch)
	}
	assert.Equal(t, "6", byID["6.12-amd64"].ExpectedABI())
	assert.Equal(t, "disabled", d.ExpectedABI())
	// Issue 13: a kernel without unprivileged user namespaces, and ABI-capped columns for the ABIs no Debian
	// kernel has.
	assert.Contains(t, byID["6.12-amd64-nouserns"].Cmdline, "sysctl.user.max_user_namespaces=0")
	caps := map[int]bool{}
	for _, k := range m.Kernels {
		if k.ABICap > 0 {
			caps[k.ABICap] = true
			assert.Less(t, k.ABICap, k.ABI, k.ID)
		}
	}
	assert.Equal(t, map[int]bool{1: true, 3: true, 4: true, 5: true}, caps)
	// Issue 15: every host emulation runs on each arch's oldest and newest Landlock kernel between them (the
	// ABI 2 and the ABI 11 branches), nested-supervisor once; each column is a kernel the matrix also runs plainly.
	emu := map[string][]string{}
	for _, k := range m.Kernels {
		if k.HostEmulation == "" {
			continue
		}
		emu[k.HostEmulation] = append(emu[k.HostEmulation], k.Arch+"/"+strconv.Itoa(k.ABI))
		plain := false
		for _, o := range m.Kernels {
			plain = plain || (o.HostEmulation == "" && o.ABICap == 0 && o.Cmdline == "" && o.Package == k.Package && o.Version == k.Version)
		}
		assert.True(t, plain, "%s: no plain column of the same kernel", k.ID)
	}
	assert.ElementsMatch(t, []string{"amd64/2", "amd64/11", "arm64/11"}, emu["ubuntu-userns-restricted"])
	assert.ElementsMatch(t, []string{"amd64/2", "amd64/11", "arm64/2"}, emu["no-namespaces"])
	assert.Equal(t, []string{"amd64/11"}, emu["nested-supervisor"])
	// The guest tools name a file for git, bwrap and the loader.
	var files []string
	for _, tl := range m.GuestTools {
		for _, f := range tl.Files {
			files = append(files, Expand(f[0], "arm64"))
		}
	}
	assert.Contains(t, files, "/usr/bin/git")
	assert.Contains(t, files, "/usr/bin/bwrap")
	assert.Contains(t, files, "/usr/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1")
	// python3 and what toolchains/python-multiprocessing imports: its C extensions and the interpreter's landmark.
	assert.Contains(t, files, "/usr/bin/python3")
	assert.Contains(t, files, "/usr/lib/python3.13/os.py")
	assert.Contains(t, files, "/usr/lib/python3.13/concurrent/futures/process.py")
	assert.Contains(t, files, "/usr/lib/python3.13/lib-dynload/_multiprocessing.cpython-313-aarch64-linux-gnu.so")
}

func TestParseRejectsBadHostEmulation(t *testing.T) {
	base := `{"schema":"confine.vm.kernels/v1","apt_sources":["deb x"],"busybox":{"package":"b","version":"1"},"kernels":[%s]}`
	_, err := Parse([]byte(fmt.Sprintf(base, `{"id":"k","arch":"amd64","package":"linux-image-x-amd64","version":"1","landlock":"available","abi":6,"host_emulation":"docker"}`)))
	require.ErrorContains(t, err, `host_emulation "docker"`)
	_, err = Parse([]byte(fmt.Sprintf(base, `{"id":"k","arch":"amd64","package":"linux-image-x-amd64","version":"1","landlock":"absent","abi":0,"host_emulation":"no-namespaces"}`)))
	require.ErrorContains(t, err, "needs landlock available")
	_, err = Parse([]byte(fmt.Sprintf(base, `{"id":"k","arch":"amd64","package":"linux-image-x-amd64","version":"1","landlock":"available","abi":6,"host_emulation":"nested-supervisor"}`)))
	require.NoError(t, err)
}

func TestParseRejectsABICapNotBelow(t *testing.T) {
	base := `{"schema":"confine.vm.kernels/v1","apt_sources":["deb x y z"],"busybox":{"package":"b","version":"1"},"kernels":[%s]}`
	_, err := Parse([]byte(fmt.Sprintf(base, `{"id":"k","arch":"amd64","package":"linux-image-x-amd64","version":"1","landlock":"available","abi":6,"abi_cap":6}`)))
	require.ErrorContains(t, err, "abi_cap 6 must be below")
	_, err = Parse([]byte(fmt.Sprintf(base, `{"id":"k","arch":"amd64","package":"linux-image-x-amd64","version":"1","landlock":"available","abi":6,"abi_cap":3}`)))
	require.NoError(t, err)
}

func TestParseRejects(t *testing.T) {
	base := `{"schema":"confine.vm.kernels/v1","apt_sources":["deb x y z"],"busybox":{"package":"b","version":"1"},"kernels":[%s]}`
	for name, tc := range map[string]struct{ kernels, want string }{
		"unknown key":      {`{"id":"a","arch":"amd64","package":"linux-image-a","version":"1","landlock":"absent","abi":0,"extra":1}`, "unknown field"},
		"duplicate":        {`{"id":"a","arch":"amd64","package":"linux-image-a","version":"1","landlock":"absent"},{"id":"a","arch":"amd64","package":"linux-image-a","version":"1","landlock":"absent"}`, "duplicate id"},
		"bad arch":         {`{"id":"a","arch":"riscv64","package":"linux-image-a","version":"1","landlock":"absent"}`, "arch"},
		"abi without ll":   {`{"id":"a","arch":"amd64","package":"linux-image-a","version":"1","landlock":"absent","abi":3}`, "needs abi 0"},
		"available no abi": {`{"id":"a","arch":"amd64","package":"linux-image-a","version":"1","landlock":"available"}`, "abi >= 1"},
		"not a kernel":     {`{"id":"a","arch":"amd64","package":"bash","version":"1","landlock":"absent"}`, "not linux-image"},
		"bad state":        {`{"id":"a","arch":"amd64","package":"linux-image-a","version":"1","landlock":"maybe"}`, "want available"},
		"no version":       {`{"id":"a","arch":"amd64","package":"linux-image-a","ref":"r/k:a","landlock":"absent"}`, "package and version go together"},
		"neither":          {`{"id":"a","arch":"amd64","landlock":"absent"}`, "not linux-image"},
	} {
		_, err := Parse([]byte(strings.Replace(base, "%s", tc.kernels, 1)))
		assert.ErrorContains(t, err, tc.want, name)
	}
}

func TestParseRefEntry(t *testing.T) {
	m, err := Parse([]byte(`{"schema":"confine.vm.kernels/v1","apt_sources":["deb x y z"],"busybox":{"package":"b","version":"1"},` +
		`"kernels":[{"id":"wsl2-6.6","arch":"amd64","ref":"ghcr.io/you/kernels:wsl2-6.6","landlock":"available","abi":3}]}`))
	require.NoError(t, err)
	assert.Equal(t, "ghcr.io/you/kernels:wsl2-6.6", m.Kernels[0].Ref)
	assert.Empty(t, m.Kernels[0].Package)
}

func TestSelectAndShard(t *testing.T) {
	m, err := Load()
	require.NoError(t, err)
	_, err = m.Select([]string{"9.9-amd64"}, nil)
	assert.ErrorContains(t, err, `unknown kernel "9.9-amd64"`)
	_, err = m.Select(nil, []string{"riscv64"})
	assert.ErrorContains(t, err, `unknown arch "riscv64"`)
	arm, err := m.Select(nil, []string{"arm64"})
	require.NoError(t, err)
	for _, k := range arm {
		assert.Equal(t, "arm64", k.Arch)
	}
	all, err := m.Select(nil, nil)
	require.NoError(t, err)
	assert.Len(t, all, len(m.Kernels))
	// Shards partition the selection.
	seen := map[string]int{}
	for i := 1; i <= 3; i++ {
		s, err := Shard(all, i, 3)
		require.NoError(t, err)
		for _, k := range s {
			seen[k.ID]++
		}
	}
	assert.Len(t, seen, len(all))
	for id, n := range seen {
		assert.Equal(t, 1, n, id)
	}
	_, err = Shard(all, 0, 2)
	assert.Error(t, err)
	_, err = Shard(all, 3, 2)
	assert.Error(t, err)
}
