//go:build wsl2

package launch

// wsl2Build is true in the WSL2 artifact (build tag wsl2, selected by the //platforms:wsl2 constraint): the
// interop check runs whatever the kernel release says.
const wsl2Build = true
