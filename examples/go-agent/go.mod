module github.com/confine-dev/confine/examples/go-agent

go 1.26.0

require (
	github.com/confine-dev/confine/sandbox v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

// The launcher's module from this repository: go.work uses it too; the replace is for builds without go.work.
replace github.com/confine-dev/confine/sandbox => ../../sandbox
