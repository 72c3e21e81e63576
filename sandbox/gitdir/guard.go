package gitdir

import (
	"errors"
	"io"
	"os"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/confine-dev/confine/sandbox/internal/msg"
	"github.com/confine-dev/confine/sandbox/pathfd"
)

// A Guard is one path of the repository's own git metadata that lies beneath a writable root and that
// unconfined git later reads or runs: a file the confined command leaves there is code that runs outside the
// sandbox, with a delay (a hook, core.fsmonitor in config, a commondir that points at a config of the
// command's). The mount layer binds each Guard onto itself: a Pin stays writable (git writes its index, HEAD and
// locks there) but, as a mount point, cannot be renamed, removed or replaced (EBUSY); any other Guard is bound
// read-only (EROFS; EBUSY for a rename over it or its removal).
type Guard struct {
	Path     string // absolute, clean, no symlink in it
	Pin      bool   // a directory bound writable; else bound read-only
	Dir      bool   // a directory (else a regular file)
	Dev, Ino uint64 // its identity where it was found or made: the layer binds nothing else
	Made     bool   // it was missing, and Guards made it (a placeholder, which stays: see Guards)
}

// What Guards makes where a guarded name is missing, so that a mount point exists for it. A placeholder
// stays after the run: removing it would lift the bind of every other confine running in the same repository
// (Linux 3.18 and later detach the mounts of other mount namespaces from a mount point that is unlinked), and
// each is one git already reads as if it were missing:
//   - commondir containing "." names the git directory itself as its common directory (get_common_dir_noenv,
//     setup.c);
//   - an empty config, or config.worktree, sets nothing;
//   - an empty hooks/ runs nothing.
const (
	commonPlaceholder = ".\n"
	maxGuards         = 256 // mounts; more are a gap (a repository with that many submodules or worktrees)
	maxModuleDepth    = 4   // submodule git directories nest as modules/<name>/modules/<name>, names with "/"
)

// IsCommonPlaceholder says whether b, a commondir file's text, is the placeholder Guards makes: the git
// directory is its own common directory, as if there were no commondir.
func IsCommonPlaceholder(b []byte) bool { return string(b) == commonPlaceholder }

// Guards finds the git metadata beneath the worktree wt that unconfined git later reads or runs, for the mount
// layer to bind (see Guard), given what Discover found (res, with its descriptors still open), and makes the
// placeholders of the missing names. It returns the guards, parents first (a Pin before what lies beneath it),
// and the gaps: what cannot be guarded, and why, one line each (a writable index: GitlinkGap; a main checkout:
// PlainSpecialGap; a symlink where a guarded name is; more than maxGuards). An error is a system failure (a
// placeholder that could not be made); nothing is then guarded.
//
// What is guarded:
//   - a main checkout (WORKTREE/.git a directory): .git pinned; its config, config.worktree, commondir and
//     hooks/ read-only; each worktrees/<name>/ (another checkout's registration) pinned, with its commondir,
//     gitdir and config.worktree read-only; each submodule git directory modules/<name>/ pinned, with the same
//     set as .git's, nested ones too (no commondir placeholder there: see gitDir). A core.hooksPath inside
//     the worktree is a gap (see hooksPath);
//   - a linked worktree: the .git file, read-only; and, in its registration <common>/worktrees/<name>/
//     (granted), commondir, gitdir and config.worktree, read-only;
//   - any other .git file (--separate-git-dir, a submodule's checkout): the file, read-only; and where the caller
//     left res.Separate (the git directory it names lies in a writable root, which the caller grants it as, so
//     that the layer holds what lies in it), that directory as a main checkout's .git, but not pinned (a root's
//     mount cannot be renamed).
//
// With place false nothing is made: a missing name is left out, and the gaps are the same (a launch that is
// refused for them, as --strict's is, leaves nothing behind). globals are the user's and the system's git
// config files (GlobalConfigs), read only for a relative core.hooksPath, which git takes in each worktree.
func Guards(wt *pathfd.Root, res *Result, place bool, globals []string) ([]Guard, []string, error) {
	g := &guarder{place: place}
	fd, err := unix.Openat(wt.FD, ".git", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, msg.Err(wt.Path, "/.git: ", err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, nil, err
	}
	dotgit := wt.Path + "/.git"
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		g.add(Guard{Path: dotgit, Pin: true, Dir: true, Dev: st.Dev, Ino: st.Ino})
		g.gaps = append(g.gaps, PlainSpecialGap(dotgit), GitlinkGap(dotgit+"/index"))
		gd := &pathfd.Root{Path: dotgit, FD: fd}
		conf := g.config(gd)
		err = g.gitDir(fd, dotgit, 0, conf)
		g.hooksPath(wt.Path, dotgit+"/hooks", conf)
		if b, rerr := readChildMax(gd, "config.worktree", maxConfig); rerr == nil {
			g.hooksPath(wt.Path, dotgit+"/hooks", b) // extensions.worktreeConfig: git reads it after config
		}
	case unix.S_IFREG:
		g.add(Guard{Path: dotgit, Dev: st.Dev, Ino: st.Ino})
		if res != nil && res.Registration != nil {
			g.gaps = append(g.gaps, GitlinkGap(res.Registration.Path+"/index"))
			for _, name := range []string{"commondir", "gitdir"} {
				if err = g.file(res.Registration.FD, res.Registration.Path, name, nil); err != nil {
					break
				}
			}
			if err == nil {
				err = g.file(res.Registration.FD, res.Registration.Path, "config.worktree", []byte{})
			}
			g.registrationModules(res.Registration.FD, res.Registration.Path)
			if res.CommonDir != nil {
				g.hooksPath(wt.Path, "", g.config(res.CommonDir))
			}
		}
		if res != nil && res.Separate != nil {
			sep := res.Separate
			g.gaps = append(g.gaps, SeparateSpecialGap(sep.Path), GitlinkGap(sep.Path+"/index"))
			conf := g.config(sep)
			err = g.gitDir(sep.FD, sep.Path, 0, conf)
			g.hooksPath(wt.Path, sep.Path+"/hooks", conf)
		}
	default: // Discover refuses it before this is asked
		return nil, nil, msg.Err(dotgit, " is neither a file nor a directory")
	}
	if err != nil {
		return nil, nil, err
	}
	for _, path := range globals {
		g.hooksPath(wt.Path, "", readGlobal(path))
	}
	return g.guards, g.gaps, nil
}

// ReadOnlyGaps are what a read-only launch cannot vouch for in the git directory dir, whose config and
// config.worktree it reads: the files the config includes, a core.hooksPath in either, and a symlink where config,
// config.worktree, commondir or hooks is (each may lead into a writable root such as /tmp); one line each, as
// Guards' gaps.
func ReadOnlyGaps(dir *pathfd.Root) []string {
	g := &guarder{}
	conf := g.config(dir)
	wtConf, _ := readChildMax(dir, "config.worktree", maxConfig)
	for _, b := range [][]byte{conf, wtConf} {
		if v, ok := ConfigValue(b, "core", "hookspath"); ok && v != "" {
			g.gaps = append(g.gaps, msg.Str("git: the config in ", dir.Path, " sets core.hooksPath ", msg.Quoted(v),
				": what lies there is not checked"))
		}
	}
	for _, name := range []string{"config", "config.worktree", "commondir", "hooks"} {
		var st unix.Stat_t
		if unix.Fstatat(dir.FD, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK {
			g.gaps = append(g.gaps, "git: "+dir.Path+"/"+name+" is a symlink: where it leads is not checked")
		}
	}
	return g.gaps
}

// SubmoduleGap is the gap of a checkout whose index the command cannot write (a separate git directory outside
// the writable roots): an existing submodule's .git file in the worktree (at wt) it can still rewrite, which
// leads a later unconfined git status into a git directory the command made (GitlinkGap's second route).
func SubmoduleGap(wt string) string {
	return "git: a submodule's .git file in " + wt + " that the command rewrites leads a later unconfined git " +
		"status into a git directory the command made, whose core.fsmonitor git runs"
}

// GlobalConfigs are the git config files beyond the repository's that git reads, given $HOME and
// $XDG_CONFIG_HOME (either may be empty): /etc/gitconfig, $XDG_CONFIG_HOME/git/config (else
// ~/.config/git/config) and ~/.gitconfig (git-config(1), FILES).
func GlobalConfigs(home, xdg string) []string {
	out := []string{"/etc/gitconfig"}
	if xdg == "" && strings.HasPrefix(home, "/") {
		xdg = home + "/.config"
	}
	if strings.HasPrefix(xdg, "/") {
		out = append(out, xdg+"/git/config")
	}
	if strings.HasPrefix(home, "/") {
		out = append(out, home+"/.gitconfig")
	}
	return out
}

// maxConfig is the largest config file read for core.hooksPath and includes, in bytes; a larger one is a gap.
const maxConfig = 1 << 20

// config reads the config of the git directory gd for hooksPath, and reports as gaps what no guard holds:
// includes (git reads the files [include] and [includeIf] name, which can lie in the worktree, or be missing
// and so be made by the command), and a config that cannot be read to tell. nil where there is none.
func (g *guarder) config(gd *pathfd.Root) []byte {
	b, err := readChildMax(gd, "config", maxConfig)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		g.gaps = append(g.gaps, "git: "+err.Error()+": not checked for includes and core.hooksPath")
		return nil
	}
	if hasInclude(b) {
		g.gaps = append(g.gaps, "git: "+gd.Path+"/config includes other files ([include] or [includeIf]): they "+
			"are not held, and a missing one the command can make")
	}
	return b
}

// hasInclude says whether the config text b has an [include] or [includeIf "…"] section.
func hasInclude(b []byte) bool {
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "[") {
			continue
		}
		name := strings.ToLower(strings.TrimLeft(line[1:], " \t"))
		if end := strings.IndexAny(name, " \t\"]"); end >= 0 {
			name = name[:end]
		}
		if name == "include" || name == "includeif" {
			return true
		}
	}
	return false
}

// readGlobal reads the git config file at path (a user's or the system's, so following symlinks: dotfile
// managers link them), at most maxConfig bytes; nil when it cannot. It opens only a regular file: the path is
// looked at first (O_PATH), then opened without blocking and compared by inode (a FIFO swapped in would hang).
func readGlobal(path string) []byte {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Size > maxConfig {
		return nil
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var rst unix.Stat_t
	if unix.Fstat(fd, &rst) != nil || rst.Dev != st.Dev || rst.Ino != st.Ino {
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfig))
	if err != nil {
		return nil
	}
	return b
}

// PlainSpecialGap is the gap every main checkout's .git (at dotgit) leaves: it lies inside the worktree, whose
// Landlock rule grants making symlinks, FIFOs and sockets, and no mount can take that right away from part of it.
// A symlink planted as a reflog or a loose ref is written through by a later unconfined git commit (checked
// with git 2.39: the reflog line lands in the symlink's target).
func PlainSpecialGap(dotgit string) string {
	return "git: " + dotgit + " lies inside the worktree, whose rule grants symlinks, FIFOs and sockets: a symlink " +
		"the command plants as a reflog or a ref there is written through by a later unconfined git commit " +
		"(a linked worktree's git directories get no such right)"
}

// SeparateSpecialGap is the gap of a separate git directory (at dir) in a writable root such as /tmp: that root's
// rule grants symlinks, FIFOs and sockets in it, as PlainSpecialGap says of a main checkout's .git.
func SeparateSpecialGap(dir string) string {
	return "git: " + dir + " lies in a writable root whose rule grants symlinks, FIFOs and sockets: a symlink the " +
		"command plants as a reflog or a ref there is written through by a later unconfined git commit"
}

// GitlinkGap is the gap of every checkout whose index (at index) the command can write, as git add needs: a gitlink
// it adds there (git update-index --cacheinfo 160000,…), or an existing submodule's checkout whose .git file it
// rewrites, leads the next unconfined git status into a git directory the command made inside the worktree, and
// git runs that directory's core.fsmonitor (checked with git 2.39: no .gitmodules entry is needed). Closing it
// would need a read-only index, which breaks git add, or the index's gitlinks read before each launch and their
// .git held.
func GitlinkGap(index string) string {
	return "git: the index " + index + " is writable (git add needs it): a gitlink the command adds there, or a " +
		"submodule's .git file it rewrites in the worktree, leads a later unconfined git status into a git " +
		"directory the command made, whose core.fsmonitor git runs"
}

// guarder collects a repository's guards and gaps; place says whether it makes placeholders.
type guarder struct {
	guards []Guard
	gaps   []string
	place  bool
}

func (g *guarder) add(x Guard) {
	if len(g.guards) == maxGuards {
		g.gaps = append(g.gaps, msg.Str("git: more than ", maxGuards, " paths of git metadata: ", x.Path,
			" and those after it are not bound read-only"))
	}
	if len(g.guards) < maxGuards {
		g.guards = append(g.guards, x)
	}
}

// gitDir guards a git directory that has its own config (the main checkout's .git, a submodule's
// modules/<name>), open at fd as path, at submodule depth depth; conf is the main checkout's config text (depth
// 0; g.config read it).
//
// commondir gets its placeholder only in the main checkout's .git, and only where its config sets no
// core.worktree: with a commondir present, git ignores core.worktree and core.bare in that config
// (check_repository_format_gently, setup.c), and every submodule git directory has core.worktree, so a
// placeholder there would make git take the superproject for the submodule's worktree. Where no placeholder
// can be made, a missing commondir is a gap.
func (g *guarder) gitDir(fd int, path string, depth int, conf []byte) error {
	for _, f := range []struct {
		name        string
		placeholder []byte
	}{{"config", []byte{}}, {"config.worktree", []byte{}}} {
		if err := g.file(fd, path, f.name, f.placeholder); err != nil {
			return err
		}
	}
	var common []byte
	if _, worktree := ConfigValue(conf, "core", "worktree"); depth == 0 && !worktree {
		common = []byte(commonPlaceholder)
	}
	if err := g.file(fd, path, "commondir", common); err != nil {
		return err
	}
	if common == nil && unix.Faccessat(fd, "commondir", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) != nil {
		g.gaps = append(g.gaps, "git: no commondir placeholder in "+path+" (git ignores core.worktree where a "+
			"commondir is, and a submodule's git directory, or this config, sets it): a commondir the command makes "+
			"there is followed by unconfined git")
	}
	if err := g.dir(fd, path, "hooks"); err != nil {
		return err
	}
	if err := g.registrations(fd, path); err != nil {
		return err
	}
	if depth < maxModuleDepth {
		return g.modules(fd, path, "modules", depth)
	}
	if unix.Faccessat(fd, "modules", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) == nil {
		g.gaps = append(g.gaps, msg.Str("git: ", path, "/modules: submodules nested deeper than ", maxModuleDepth,
			" levels are not held"))
	}
	return nil
}

// registrationModules reports the submodule git directories of a worktree registration (open at fd as reg) as
// a gap: git keeps a linked worktree's submodules in <common>/worktrees/<name>/modules/, which is not held (a
// held config there would fail git submodule update, which rewrites core.worktree in it each time).
func (g *guarder) registrationModules(fd int, reg string) {
	if unix.Faccessat(fd, "modules", unix.F_OK, unix.AT_SYMLINK_NOFOLLOW) == nil {
		g.gaps = append(g.gaps, "git: "+reg+"/modules holds submodule git directories, which are not held: "+
			"their config and hooks the command can change")
	}
}

// registrations guards the worktrees/<name>/ entries of the git directory open at fd as path: each is read by
// git in another checkout, whose .git file names it.
func (g *guarder) registrations(fd int, path string) error {
	wd, ok, err := g.pinDir(fd, path, "worktrees")
	if err != nil || !ok {
		return err
	}
	defer unix.Close(wd)
	names, err := dirNames(wd)
	if err != nil {
		return msg.Err(path, "/worktrees: ", err)
	}
	for _, name := range names {
		rd, ok, err := g.pinDir(wd, path+"/worktrees", name)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		reg := path + "/worktrees/" + name
		for _, f := range []string{"commondir", "gitdir"} {
			if err == nil {
				err = g.file(rd, reg, f, nil)
			}
		}
		if err == nil {
			err = g.file(rd, reg, "config.worktree", []byte{})
		}
		g.registrationModules(rd, reg)
		unix.Close(rd)
		if err != nil {
			return err
		}
	}
	return nil
}

// modules guards the submodule git directories beneath dir (a name of the directory open at fd as path): a
// directory holding HEAD is one (gitDir); any other is a level of a submodule name with a "/".
func (g *guarder) modules(fd int, path, dir string, depth int) error {
	md, ok, err := g.pinDir(fd, path, dir)
	if err != nil || !ok {
		return err
	}
	defer unix.Close(md)
	names, err := dirNames(md)
	if err != nil {
		return msg.Err(path, "/", dir, ": ", err)
	}
	for _, name := range names {
		var st unix.Stat_t
		if unix.Fstatat(md, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
			continue
		}
		sub := path + "/" + dir
		if unix.Fstatat(md, name+"/HEAD", &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
			err = g.modules(md, sub, name, depth+1)
		} else if sd, ok, perr := g.pinDir(md, sub, name); perr != nil || !ok {
			err = perr
		} else {
			err = g.gitDir(sd, sub+"/"+name, depth+1, nil)
			unix.Close(sd)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pinDir pins the directory name beneath fd (open as path), if it is one, and returns its O_PATH descriptor,
// which the caller closes. A missing name is not pinned (ok false); a symlink there is a gap.
func (g *guarder) pinDir(fd int, path, name string) (int, bool, error) {
	d, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return -1, false, nil
	}
	if err != nil {
		return -1, false, msg.Err(path, "/", name, ": ", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(d, &st); err != nil {
		unix.Close(d)
		return -1, false, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(d)
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			g.gaps = append(g.gaps, "git: "+path+"/"+name+" is a symlink: a mount cannot pin it, so the command can replace it")
		}
		return -1, false, nil
	}
	g.add(Guard{Path: path + "/" + name, Pin: true, Dir: true, Dev: st.Dev, Ino: st.Ino})
	return d, true, nil
}

// file guards the regular file name beneath the directory open at fd as path, read-only. Where it is missing, a
// placeholder with the text placeholder is made (none for nil: then the missing name is left, as git's
// pointers are whose absence git itself refuses).
func (g *guarder) file(fd int, path, name string, placeholder []byte) error {
	return g.guard(fd, path, name, false, placeholder != nil, placeholder)
}

// dir guards the directory name beneath fd (open as path), read-only; made empty where missing.
func (g *guarder) dir(fd int, path, name string) error {
	return g.guard(fd, path, name, true, true, nil)
}

func (g *guarder) guard(fd int, path, name string, dir, make bool, text []byte) error {
	full := path + "/" + name
	made := false
	f, err := unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) && make && g.place {
		if err = makePlaceholder(fd, name, dir, text); err != nil && !errors.Is(err, unix.EEXIST) {
			return msg.Err("making the placeholder ", full, ": ", err)
		}
		made = err == nil
		f, err = unix.Openat(fd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return msg.Err(full, ": ", err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return err
	}
	want := uint32(unix.S_IFREG)
	if dir {
		want = unix.S_IFDIR
	}
	if st.Mode&unix.S_IFMT != want {
		g.gaps = append(g.gaps, "git: "+full+" is a "+fileType(st.Mode)+": a mount cannot hold it read-only, so "+
			"the command can replace it")
		return nil
	}
	g.add(Guard{Path: full, Dir: dir, Dev: st.Dev, Ino: st.Ino, Made: made})
	return nil
}

// makePlaceholder makes name beneath fd: an empty directory (mode 0755), or a regular file (0644) holding text,
// created exclusively, so that nothing there is followed or overwritten. EEXIST: another confine made it first.
func makePlaceholder(fd int, name string, dir bool, text []byte) error {
	if dir {
		return unix.Mkdirat(fd, name, 0o755)
	}
	f, err := unix.Openat(fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(f)
	for len(text) > 0 {
		n, err := unix.Write(f, text)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

func fileType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "symlink"
	case unix.S_IFDIR:
		return "directory"
	case unix.S_IFREG:
		return "regular file"
	}
	return "special file"
}

// dirNames lists the entries of the directory open (O_PATH) at fd, without "." and "..".
func dirNames(fd int) ([]string, error) {
	d, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(d)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(d, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// hooksPath reports the gap that core.hooksPath in the config text b (the repository's, its common
// directory's, the user's or the system's) leaves where it names a directory inside the worktree wt other than
// hooks (the git directory's own hooks/, which is held; "" for none): a relative value is relative to the
// worktree, as git takes it in a non-bare repository, in every worktree. git runs its hooks from there, and the
// command can change them. They are not held: they are the project's own files (husky's .husky, a .githooks),
// which checkout and commit change, and a read-only bind there made git checkout exit 0 with the old hook left
// (husky 9's .husky/_ only calls .husky/<hook>, tracked and writable, so holding it would hold nothing). A value
// git expands (~, %(prefix)) is a gap too.
func (g *guarder) hooksPath(wt, hooks string, b []byte) {
	v, ok := ConfigValue(b, "core", "hookspath")
	if !ok || v == "" {
		return
	}
	if strings.HasPrefix(v, "~") || strings.HasPrefix(v, "%(") {
		g.gaps = append(g.gaps, msg.Str("git: core.hooksPath ", msg.Quoted(v), " is expanded by git: not checked "+
			"for a directory inside the worktree"))
		return
	}
	p := v
	if !strings.HasPrefix(v, "/") {
		p = wt + "/" + v
	}
	p = cleanPath(p)
	switch {
	case p == hooks:
	case p == wt || strings.HasPrefix(p, wt+"/"):
		g.gaps = append(g.gaps, "git: core.hooksPath names "+p+", inside the worktree: the command can change the "+
			"hooks there, which unconfined git runs (they are the project's files, not held)")
	default:
		g.gaps = append(g.gaps, "git: core.hooksPath names "+p+", outside the worktree: not held (in a writable "+
			"root such as /tmp the command can put hooks there)")
	}
}

// cleanPath is path (absolute) without empty and "." components, with ".." taken textually.
func cleanPath(path string) string {
	var out []string
	for _, c := range strings.Split(path, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
		default:
			out = append(out, c)
		}
	}
	return "/" + strings.Join(out, "/")
}

// ConfigValue is the last value of section.key (both lower case; no subsection) in the git config text b, as
// git-config(1) reads it: sections and keys are case-insensitive, a value may be quoted, "\" escapes the next
// character, and '#' or ';' outside quotes starts a comment. A key with no "=" is "true". Includes are not
// followed. ok is false where the key is not set.
func ConfigValue(b []byte, section, key string) (value string, ok bool) {
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "[") {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				in = false
				continue
			}
			in = strings.EqualFold(strings.TrimSpace(line[1:end]), section)
			line = strings.TrimSpace(line[end+1:])
		}
		if !in || line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		name, rest, hasValue := strings.Cut(line, "=")
		if !strings.EqualFold(strings.TrimSpace(name), key) {
			continue
		}
		if !hasValue {
			value, ok = "true", true
			continue
		}
		value, ok = configText(strings.TrimSpace(rest)), true
	}
	return value, ok
}

// configText unquotes a config value: quotes removed, "\" escapes (\n, \t, \b, and the next character), a comment
// outside quotes dropped, trailing space outside quotes dropped.
func configText(s string) string {
	var b strings.Builder
	quoted, pending := false, 0 // pending: spaces seen outside quotes, written only if more text follows
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			c = map[byte]byte{'n': '\n', 't': '\t', 'b': '\b'}[s[i]]
			if c == 0 {
				c = s[i]
			}
		case c == '"':
			quoted = !quoted
			continue
		case !quoted && (c == '#' || c == ';'):
			return b.String()
		case !quoted && (c == ' ' || c == '\t'):
			pending++
			continue
		}
		for ; pending > 0; pending-- {
			b.WriteByte(' ')
		}
		b.WriteByte(c)
	}
	return b.String()
}
