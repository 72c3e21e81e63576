// Command confine runs a command whose writes are confined to its worktree. See sandbox/README.md.
package main

func main() {}
