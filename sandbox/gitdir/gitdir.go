// Package gitdir finds the git metadata a worktree's commands write outside the worktree, and opens it
// with the same descriptor discipline as the launcher's other roots (package pathfd): each path once, no
// symlink followed, validated on the descriptor.
//
// In a linked worktree (`git worktree add`), WORKTREE/.git is a file, "gitdir: <common>/worktrees/<name>",
// and that directory's `commondir` file names the common directory (normally "../.."): the layout of
// git-worktree(1) and gitrepository-layout(5); the parsers follow read_gitfile_gently (setup.c) and
// get_common_dir_noenv (setup.c). Discover grants, as path-beneath rules:
//
//   - <common>/worktrees/<name>: this worktree's index, HEAD, per-worktree refs, logs/HEAD, FETCH_HEAD,
//     ORIG_HEAD, rebase and merge state, and their locks;
//   - <common>/objects: new objects and packs;
//   - <common>/refs: branches, tags, remote-tracking refs and the stash, written as loose refs;
//   - <common>/logs: the reflogs of those refs.
//
// The common directory's own root is never granted. Git would create files there for three things: the
// lock of packed-refs (deleting any ref takes it: `branch -d`, dropping the last stash entry), gc.pid (a
// `gc --auto` that has work to do) and gc.log. A file-creation right in that directory (Landlock's
// MAKE_REG is per directory, and path-beneath rules only add) would also let the command create
// <common>/commondir, which redirects every later git run in the main checkout to a common directory of the
// command's choosing, with its own config and so its own hooks; or config.worktree, MERGE_HEAD, shallow.
// config and hooks/ therefore stay read-only, and those operations fail under confine (README.md lists
// them).
//
// The pointers are text the confined command could have written on an earlier run, so they are refused
// (an *Error) when they are malformed, huge, missing, lead through a symlink, point at /, at $HOME or
// above it, above the worktree, at a sibling worktree's directory, or back at themselves.
//
// When WORKTREE/.git is a directory (a main checkout) it lies inside the worktree and is writable with it;
// only a `commondir` file in it is followed, with the same rules (but the placeholder Guards makes, which names
// the directory itself). Guards lists the metadata the mount layer then holds read-only, in either layout.
package gitdir

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
)

// MaxPointer is the largest `.git`, `commondir` or `gitdir` file read, in bytes: a path, PATH_MAX
// (linux/limits.h). git's own limit for a gitfile is 4 × PATH_MAX (READ_GITFILE_ERR_TOO_LARGE).
const MaxPointer = 4096

// Error is a refused pointer: File is the file whose text (or the place it names) is at fault.
type Error struct {
	File    string
	Problem string
}

func (e *Error) Error() string { return e.File + ": " + e.Problem }

// bad is an *Error.
func bad(file, problem string) *Error { return &Error{File: file, Problem: problem} }

// Grant is one git directory to make writable: FD is an O_PATH|O_CLOEXEC descriptor of Path, a
// directory, opened relative to an already validated descriptor without following symlinks.
type Grant struct {
	pathfd.Root
	Reason string // why git needs it, for the report
}

// Result is what Discover found. The caller owns every descriptor in Grants, Registration and CommonDir (Close
// closes them).
type Result struct {
	GitDir string   // the worktree's git directory, "" when WORKTREE/.git does not exist
	Common string   // the common directory ("" when not a linked worktree)
	Grants []Grant  // the directories to grant, outside the worktree
	Notes  []string // what was not granted and why, for the report's warnings
	// Registration and CommonDir, for a linked worktree's layout (Common set), are descriptors of the git
	// directory that the pointers led to (<common>/worktrees/<name>) and of the common directory, so that the
	// caller can check where they lie by identity: a registration that a confined command could have written
	// (beneath a writable root) grants nothing that command could not already write (Trust). Else nil.
	Registration, CommonDir *pathfd.Root
	// Separate is a descriptor of the git directory a .git file names that has no commondir (or confine's
	// placeholder): --separate-git-dir's, or a submodule's in its superproject's .git/modules. Its index and HEAD
	// lie beside its config and hooks, so Discover grants nothing in it; where it lies in a writable root anyway
	// (/tmp), the caller holds its metadata as a main checkout's (Guards). Else nil.
	Separate *pathfd.Root
}

// SeparateNote is the warning for a separate git directory (Result.Separate, at path, named by dotgit) that no
// writable root holds: nothing in it is granted.
func SeparateNote(path, dotgit string) string {
	return "git: " + path + " (from " + dotgit + ") has no commondir, so it is not a linked worktree's: nothing " +
		"in it is granted, since its index and HEAD lie beside its config and hooks"
}

// Close closes the descriptors.
func (r *Result) Close() {
	for _, g := range r.Grants {
		unix.Close(g.FD)
	}
	r.Grants = nil
	for _, d := range []**pathfd.Root{&r.Registration, &r.CommonDir, &r.Separate} {
		if *d != nil {
			(*d).Close()
			*d = nil
		}
	}
}

// dup is a second descriptor of r, which the caller closes.
func dup(r *pathfd.Root) (*pathfd.Root, error) {
	fd, err := unix.FcntlInt(uintptr(r.FD), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return &pathfd.Root{Path: r.Path, FD: fd, Kind: r.Kind}, nil
}

// ParseGitFile returns the path of a `.git` file's "gitdir: <path>" line, as git reads it: the text must
// start with "gitdir: ", trailing CR and LF are dropped, and the rest is the path. Unlike git, any other
// control character (a second line, NUL) is refused, and so is an unclean path (see checkPointer).
func ParseGitFile(b []byte) (string, error) {
	if len(b) > MaxPointer {
		return "", errors.New("is " + msg.Itoa(len(b)) + " bytes, more than " + msg.Itoa(MaxPointer))
	}
	s, ok := strings.CutPrefix(string(b), "gitdir: ")
	if !ok {
		return "", errors.New(`does not start with "gitdir: "`)
	}
	s = strings.TrimRight(s, "\r\n")
	return s, checkPointer(s)
}

// ParseCommonDir returns the path in a `commondir` file, as git reads it: one trailing LF is dropped.
// Anything else that is not a clean path on one line is refused (see checkPointer).
func ParseCommonDir(b []byte) (string, error) {
	if len(b) > MaxPointer {
		return "", errors.New("is " + msg.Itoa(len(b)) + " bytes, more than " + msg.Itoa(MaxPointer))
	}
	s := strings.TrimSuffix(string(b), "\n")
	return s, checkPointer(s)
}

// checkPointer accepts an absolute path or a relative one, one line, with no empty, "." or ".."
// components, except that a relative path may start with "..": git writes "/abs/.git/worktrees/wt",
// "../..", and (worktree.useRelativePaths, 2.48) "../main/.git/worktrees/wt". A ".." after a name could
// climb out of a symlink by a route other than the text's, so it is refused.
func checkPointer(s string) error {
	if s == "" {
		return errors.New("names no path")
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return errors.New("has a control character at byte " + msg.Itoa(i))
		}
	}
	rest, abs := strings.CutPrefix(s, "/")
	if abs && rest == "" {
		return errors.New("points at /")
	}
	names := false
	for _, c := range strings.Split(rest, "/") {
		switch {
		case c == "" || c == ".":
			return errors.New("path " + strconv.Quote(s) + " is not clean")
		case c == "..":
			if abs || names {
				return errors.New("path " + strconv.Quote(s) + " is not clean (.. after a name)")
			}
		default:
			names = true
		}
	}
	return nil
}

// Join resolves a checked pointer p against base (an absolute, clean, symlink-free directory): an
// absolute p is itself; a relative one climbs its leading ".." from base, textually, which is what the
// kernel does for a path without symlinks. It errors if p climbs above /.
func Join(base, p string) (string, error) {
	if strings.HasPrefix(p, "/") {
		return p, nil
	}
	for {
		rest, ok := strings.CutPrefix(p, "..")
		if !ok || (rest != "" && rest[0] != '/') {
			break
		}
		if base == "/" {
			return "", errors.New("climbs above /")
		}
		base = base[:strings.LastIndexByte(base, '/')]
		if base == "" {
			base = "/"
		}
		p = strings.TrimPrefix(rest, "/")
	}
	switch {
	case p == "":
		return base, nil
	case base == "/":
		return "/" + p, nil
	}
	return base + "/" + p, nil
}

// within says whether path is dir or lies beneath it (both absolute and clean).
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}

// Discover reads WORKTREE/.git through the validated descriptor wt and returns the git directories to
// grant. root is pathfd.Here or the descriptor of another mount namespace's root directory, in which the
// pointed-at paths are opened (pathfd.OpenIn). home is $HOME ("" or a relative value: not checked). An
// error is an *Error (a refused pointer) or a system failure; on error no descriptor stays open.
func Discover(root int, wt *pathfd.Root, home string) (*Result, error) {
	res := &Result{}
	dotgit := wt.Path + "/.git"
	fd, err := unix.Openat(wt.FD, ".git", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return res, nil // not a git worktree, or not its top: nothing to grant
	}
	if err != nil {
		return nil, bad(dotgit, "cannot be opened: "+err.Error())
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	g := &finder{root: root, wt: wt.Path, home: home}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR: // a main checkout: .git is inside the worktree, writable with it
		res.GitDir = dotgit
		gd := &pathfd.Root{Path: dotgit, FD: fd, Kind: pathfd.Dir}
		b, err := readChild(gd, "commondir")
		if errors.Is(err, unix.ENOENT) || (err == nil && IsCommonPlaceholder(b)) {
			return res, nil // a main checkout: its metadata is guarded (Guards), not granted
		}
		if err != nil {
			return nil, err
		}
		err = g.linked(res, gd, b)
		if err != nil {
			res.Close()
			return nil, err
		}
		return res, nil
	case unix.S_IFREG:
	case unix.S_IFLNK:
		return nil, bad(dotgit, "is a symlink")
	default:
		return nil, bad(dotgit, "is neither a file nor a directory")
	}
	b, err := readAt(wt.FD, ".git", dotgit, &st, MaxPointer)
	if err != nil {
		return nil, err
	}
	p, err := ParseGitFile(b)
	if err != nil {
		return nil, bad(dotgit, err.Error())
	}
	gitPath, err := Join(wt.Path, p)
	if err != nil {
		return nil, bad(dotgit, "gitdir "+strconv.Quote(p)+" "+err.Error())
	}
	if err := g.place(dotgit, "gitdir", gitPath); err != nil {
		return nil, err
	}
	gd, err := g.open(dotgit, "gitdir", gitPath)
	if err != nil {
		return nil, err
	}
	res.GitDir = gitPath
	b, err = readChild(gd, "commondir")
	if errors.Is(err, unix.ENOENT) || (err == nil && IsCommonPlaceholder(b) && !isRegistration(gitPath)) {
		// --separate-git-dir or a submodule: index and HEAD live beside config and hooks, which no rule
		// may open up. The caller decides what it is (Separate). Confine's commondir placeholder stands
		// there where Guards held it; in a linked worktree's registration (<common>/worktrees/<name>) a
		// commondir of "." is refused below, as linked does. (Not told apart by a gitdir file, which a
		// command could plant in a separate directory in /tmp to have every later launch refused.)
		res.Separate = gd
		return res, nil
	}
	if err == nil {
		// The worktree's own directory is a grant: from here on res owns gd.
		res.Grants = append(res.Grants, Grant{Root: *gd, Reason: "this worktree's git directory: index, HEAD, " +
			"per-worktree refs and reflog, rebase and merge state, and their locks"})
		err = g.linked(res, gd, b)
		if err == nil {
			res.Notes = append(res.Notes, Leftovers(gd)...)
		}
	} else {
		gd.Close()
	}
	if err != nil {
		res.Close()
		return nil, err
	}
	return res, nil
}

// finder holds what every pointer is checked against.
type finder struct {
	root int
	wt   string // the worktree, absolute and clean
	home string
}

// place refuses a pointer (from file, naming what) that lands on /, on $HOME or above it, or on the
// worktree or above it (a loop), or in a kernel tree.
func (g *finder) place(file, what, path string) error {
	switch {
	case path == "/":
		return bad(file, what+" points at /")
	case within(g.wt, path):
		return bad(file, what+" "+path+" is the worktree or contains it (a loop)")
	case g.home != "" && strings.HasPrefix(g.home, "/") && within(g.home, path):
		return bad(file, what+" "+path+" is $HOME or contains it")
	}
	for _, t := range []string{"/proc", "/sys", "/dev"} {
		if within(path, t) {
			return bad(file, what+" "+path+" is in "+t+", which holds kernel state")
		}
	}
	return nil
}

// open opens a pointed-at directory once (pathfd.OpenIn: no symlink in any component).
func (g *finder) open(file, what, path string) (*pathfd.Root, error) {
	r, err := pathfd.OpenIn(g.root, path)
	if err != nil {
		if errors.Is(err, pathfd.ErrBadPath) {
			return nil, bad(file, what+" "+strings.TrimPrefix(err.Error(), pathfd.ErrBadPath.Error()+": "))
		}
		return nil, err
	}
	if r.Kind != pathfd.Dir {
		r.Close()
		return nil, bad(file, what+" "+path+" is not a directory")
	}
	return r, nil
}

// linked follows gd's commondir (its text b), checks that gd is the common directory's
// worktrees/<name> entry registered for this worktree, and adds the common grants to res.
func (g *finder) linked(res *Result, gd *pathfd.Root, b []byte) error {
	cdFile := gd.Path + "/commondir"
	p, err := ParseCommonDir(b)
	if err != nil {
		return bad(cdFile, err.Error())
	}
	common, err := Join(gd.Path, p)
	if err != nil {
		return bad(cdFile, "commondir "+strconv.Quote(p)+" "+err.Error())
	}
	if err := g.place(cdFile, "commondir", common); err != nil {
		return err
	}
	switch {
	case common == gd.Path:
		return bad(cdFile, "commondir points back at its own directory (a loop)")
	case gd.Path != common+"/worktrees/"+gd.Path[strings.LastIndexByte(gd.Path, '/')+1:]:
		return bad(cdFile, "commondir "+common+" does not hold "+gd.Path+" as worktrees/<name>: not a "+
			"linked worktree's layout")
	}
	// The registration's back-pointer must name this worktree: else the .git file points at a sibling's.
	back := gd.Path + "/gitdir"
	b, err = readChild(gd, "gitdir")
	if errors.Is(err, unix.ENOENT) {
		return bad(back, "is missing: the worktree is not registered (git worktree repair)")
	}
	if err != nil {
		return err
	}
	bp, err := ParseCommonDir(b) // the same shape: one path, one trailing LF
	if err != nil {
		return bad(back, err.Error())
	}
	if bp, err = Join(gd.Path, bp); err != nil || bp != g.wt+"/.git" {
		return bad(back, "names "+strconv.Quote(bp)+", not "+g.wt+"/.git: the gitdir belongs to another "+
			"worktree (a sibling), or this one moved (git worktree repair)")
	}
	cd, err := g.open(cdFile, "commondir", common)
	if err != nil {
		return err
	}
	res.Common, res.CommonDir = common, cd
	if res.Registration, err = dup(gd); err != nil {
		return err
	}
	for _, c := range []struct{ name, reason string }{
		{"objects", "the shared object database: new objects and packs"},
		{"refs", "the shared refs: branches, tags, remote-tracking refs and the stash, as loose refs"},
		{"logs", "the shared reflogs of those refs"},
	} {
		fd, err := unix.Openat(cd.FD, c.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) && c.name == "logs" {
			res.Notes = append(res.Notes, "git: "+common+"/logs does not exist, so no rule grants it: reflogs "+
				"cannot be written")
			continue
		}
		if err != nil {
			return bad(cdFile, "commondir "+common+" has no "+c.name+" ("+err.Error()+"): not a git directory")
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			return bad(cdFile, "commondir "+common+": "+c.name+" is not a directory (a symlink?)")
		}
		res.Grants = append(res.Grants, Grant{Root: pathfd.Root{Path: common + "/" + c.name, FD: fd,
			Kind: pathfd.Dir}, Reason: c.reason})
	}
	// The reftable ref format (extensions.refStorage=reftable, git 2.45 and later) keeps every shared ref,
	// pseudo-ref and reflog in <common>/reftable (tables.list and its tables, rewritten through
	// tables.list.lock there), and this worktree's own in worktrees/<name>/reftable: granting that one
	// directory whole lets git create, update and delete refs, which the files format cannot do here (its
	// deletions lock <common>/packed-refs). It grants no more than refs/ does: the refs themselves.
	reftable := false
	fd, err := unix.Openat(cd.FD, "reftable", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT): // the files format
	case err != nil:
		return bad(cdFile, "commondir "+common+": reftable cannot be opened: "+err.Error())
	default:
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			unix.Close(fd)
			return bad(cdFile, "commondir "+common+": reftable is not a directory (a symlink?)")
		}
		reftable = true
		res.Grants = append(res.Grants, Grant{Root: pathfd.Root{Path: common + "/reftable", FD: fd,
			Kind: pathfd.Dir}, Reason: "the shared refs in the reftable format: tables.list, its tables and their lock"})
	}
	res.Notes = append(res.Notes, LinkedLimits(common, reftable))
	return nil
}

// LinkedLimits is the warning every launch in a linked worktree gives (the report's warnings, and `confine probe
// --worktree`): what git cannot do there, because common, the common directory's root, is not writable (see
// the package doc), with reftable whether refs live in <common>/reftable (granted whole). Checked against git
// 2.39 by the conformance cases git-worktree/parity*, whose table is the README's.
func LinkedLimits(common string, reftable bool) string {
	s := "git: linked worktree: " + common + " itself is not writable (a file created there could redirect " +
		"the main checkout's git), so under confine git cannot write the shared config (git config, remote add, " +
		"checkout -b NEW origin/X, submodule add, sparse-checkout set), add a worktree, or run gc"
	if reftable {
		return s + "; run those outside confine"
	}
	return s + ", and cannot delete a ref, which locks " + common + "/packed-refs: branch -d, tag -d, " +
		"fetch --prune, bisect, stash pop and drop, and the end of cherry-pick and rebase, which then exit 0 " +
		"but leave CHERRY_PICK_HEAD or REBASE_HEAD behind (git 2.39 and 2.47; git 2.47 also leaves AUTO_MERGE " +
		"after commit, merge and stash). Run those outside confine, or " +
		"use the reftable ref format (git 2.45+; git 2.46+ converts with git refs migrate --ref-format=reftable), whose ref directory " +
		"confine grants"
}

// isRegistration says whether the git directory at path (absolute, clean) has a linked worktree's
// registration's place, <common>/worktrees/<name>.
func isRegistration(path string) bool {
	return filepath.Base(filepath.Dir(path)) == "worktrees"
}

// readChild reads the regular file name in dir, opened once beneath dir's descriptor without following a
// symlink. A missing file is ENOENT (unwrapped by errors.Is); anything else odd is an *Error.
func readChild(dir *pathfd.Root, name string) ([]byte, error) {
	return readChildMax(dir, name, MaxPointer)
}

// readChildMax is readChild for a file of at most limit bytes.
func readChildMax(dir *pathfd.Root, name string, limit int) ([]byte, error) {
	file := dir.Path + "/" + name
	fd, err := unix.Openat(dir.FD, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, err
	}
	if err != nil {
		return nil, bad(file, "cannot be opened: "+err.Error())
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, bad(file, "is not a regular file (a symlink?)")
	}
	return readAt(dir.FD, name, file, &st, limit)
}

// readAt reads the regular file name beneath the directory descriptor dir, which an O_PATH descriptor
// (fstat'ed as st) already showed to be a regular file: at most MaxPointer+1 bytes. O_PATH cannot read, so
// it opens the same entry again, without following a symlink and without blocking (a FIFO swapped in), and
// refuses unless that is the same inode, or more than limit bytes.
func readAt(dir int, name, file string, st *unix.Stat_t, limit int) ([]byte, error) {
	if st.Size > int64(limit) {
		return nil, bad(file, "is "+strconv.FormatInt(st.Size, 10)+" bytes, more than "+msg.Itoa(limit))
	}
	r, err := unix.Openat(dir, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, bad(file, "cannot be read: "+err.Error())
	}
	defer unix.Close(r)
	var rst unix.Stat_t
	if err := unix.Fstat(r, &rst); err != nil {
		return nil, err
	}
	if rst.Dev != st.Dev || rst.Ino != st.Ino {
		return nil, bad(file, "changed while it was read")
	}
	buf := make([]byte, limit+1)
	n := 0
	for n < len(buf) {
		m, err := unix.Read(r, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, bad(file, "cannot be read: "+err.Error())
		}
		if m == 0 {
			break
		}
		n += m
	}
	if n > limit {
		return nil, bad(file, "is more than "+msg.Itoa(limit)+" bytes")
	}
	return buf[:n], nil
}

// leftover is a pseudo-ref that git deletes when the operation that wrote it ends, and the state that says the
// operation has not ended: without it, the pseudo-ref is left from a run that could not delete it.
var leftovers = []struct{ name, inProgress, effect string }{
	{"CHERRY_PICK_HEAD", "MERGE_MSG", "git status says a cherry-pick is in progress, and every later git commit " +
		"takes that commit's author"},
	{"REVERT_HEAD", "MERGE_MSG", "git status says a revert is in progress"},
	{"REBASE_HEAD", "rebase-merge", "git status and the next rebase see a rebase that has ended"},
}

// Leftovers are warnings about the pseudo-refs in the linked worktree's git directory gd (files format) that an
// earlier confined run left: git deletes them through a ref transaction that locks <common>/packed-refs, which
// is not writable, and exits 0 (LinkedLimits). A pseudo-ref counts as left over when no state of its operation is
// beside it (MERGE_MSG, which a conflicted cherry-pick or revert writes; the sequencer directory; rebase-merge or
// rebase-apply). Checked by name beneath gd's descriptor, without following symlinks.
func Leftovers(gd *pathfd.Root) []string {
	exists := func(name string) bool {
		var st unix.Stat_t
		return unix.Fstatat(gd.FD, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
	}
	if exists("sequencer") || exists("rebase-merge") || exists("rebase-apply") {
		return nil
	}
	var out []string
	for _, l := range leftovers {
		if exists(l.name) && !exists(l.inProgress) {
			p := gd.Path + "/" + l.name
			out = append(out, "git: "+p+" is left over, most likely from a git command under confine that "+
				"could not delete it (it exits 0; see the linked worktree warning): "+l.effect+". If no such "+
				"operation is under way, remove it: rm "+p)
		}
	}
	return out
}
