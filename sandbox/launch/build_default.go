//go:build !wsl2

package launch

// wsl2Build is true in the WSL2 artifact (build tag wsl2, selected by the //platforms:wsl2 constraint).
const wsl2Build = false
