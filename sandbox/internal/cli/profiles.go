package cli

import "github.com/confine-dev/confine/sandbox/launch"

// ParseProfiles is Parse for a run that also returns the --profile names, each once, in the order given (the
// command line's, then the --config file's). Package reexec builds its flags from a Policy and compares the
// two through it.
func ParseProfiles(args []string) (launch.Config, []string, error) {
	_, in, err := parse(args)
	return in.cfg, in.profiles, err
}
