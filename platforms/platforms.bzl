"""The release platforms, for BUILD files. platforms.json is the same table for the release tooling;
//release/platforms:platforms_test fails if the two disagree."""

# name -> Go GOOS/GOARCH and whether the artifact is the WSL2 variant (build tag `wsl2`).
PLATFORMS = {
    "linux_amd64": {"goos": "linux", "goarch": "amd64", "wsl2": False},
    "linux_arm64": {"goos": "linux", "goarch": "arm64", "wsl2": False},
    "wsl2_amd64": {"goos": "linux", "goarch": "amd64", "wsl2": True},
    "wsl2_arm64": {"goos": "linux", "goarch": "arm64", "wsl2": True},
}

# GOARCH -> @platforms//cpu constraint.
CPU = {
    "amd64": "@platforms//cpu:x86_64",
    "arm64": "@platforms//cpu:aarch64",
}
