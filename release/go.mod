module github.com/confine-dev/confine/release

go 1.25.0
