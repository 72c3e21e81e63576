module github.com/confine-dev/confine/sandbox

go 1.25.0
