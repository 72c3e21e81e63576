package goreleaser

// Reading the system packages goreleaser's nfpm makes (.goreleaser.yaml `nfpms`), to prove what they
// install: each file's sha256 and permission bits, and whether the package marks it as a config file.
//
// deb (deb(5)): an ar archive of debian-binary, control.tar.* and data.tar.*; read with
// github.com/blakesmith/ar, the ar package nfpm writes debs with. Config files are the lines of the
// control archive's conffiles.
//
// rpm (rpm's docs/manual/format.md; rpmpack's Write, which nfpm writes rpms with): a 96-byte lead, the
// signature header padded to 8 bytes, the main header, then the payload, a compressed cpio archive (newc,
// read with github.com/cavaliergopher/cpio, rpmpack's own). A header is the magic 8e ad e8 01, 4 reserved
// bytes, the entry count and the store size (big-endian uint32), 16-byte index entries (tag, type,
// offset, count) and the store. Config files carry RPMFILE_CONFIG (1) in FILEFLAGS.
//
// Only gzip (and, for debs, uncompressed) members and payloads are read, with Go's own gzip:
// .goreleaser.yaml states gzip for both formats, and any other compressor is an error that names it.

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/blakesmith/ar"
	"github.com/cavaliergopher/cpio"
)

// PackagedFile is one regular file a package installs.
type PackagedFile struct {
	SHA256 string // hex
	Mode   int64  // permission bits
	Config bool   // a deb conffile, or RPMFILE_CONFIG in an rpm's FILEFLAGS
}

// PackageContents maps each regular file's absolute install path ("/usr/bin/confine") to what it is.
type PackageContents map[string]PackagedFile

// cleanName turns an archive member name ("./usr/bin/confine", "usr/bin/confine") into "/usr/bin/confine".
func cleanName(n string) string { return path.Clean("/" + strings.TrimPrefix(n, "./")) }

func digest(r io.Reader) (string, error) {
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ReadDeb reads the .deb at file: its data archive's regular files, with the conffiles marked.
func ReadDeb(file string) (PackageContents, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := PackageContents{}
	var conffiles []string
	var sawData, sawControl bool
	rd := ar.NewReader(f)
	for {
		h, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: ar: %w", file, err)
		}
		name := strings.TrimSuffix(h.Name, "/") // GNU ar ends names with '/'
		var member io.Reader = io.LimitReader(rd, h.Size)
		switch {
		case strings.HasPrefix(name, "data.tar"), strings.HasPrefix(name, "control.tar"):
		default:
			continue
		}
		switch path.Ext(name) {
		case ".tar":
		case ".gz":
			zr, err := gzip.NewReader(member)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, name, err)
			}
			member = zr
		default:
			return nil, fmt.Errorf("%s: member %s: only gzip or uncompressed tar is read (.goreleaser.yaml states gzip)", file, name)
		}
		tr := tar.NewReader(member)
		for {
			th, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, name, err)
			}
			if th.Typeflag != tar.TypeReg {
				continue
			}
			if strings.HasPrefix(name, "control.tar") {
				if cleanName(th.Name) == "/conffiles" {
					sc := bufio.NewScanner(tr)
					for sc.Scan() {
						if l := strings.TrimSpace(sc.Text()); l != "" {
							conffiles = append(conffiles, l)
						}
					}
					if err := sc.Err(); err != nil {
						return nil, fmt.Errorf("%s: conffiles: %w", file, err)
					}
				}
				continue
			}
			sum, err := digest(tr)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", file, th.Name, err)
			}
			out[cleanName(th.Name)] = PackagedFile{SHA256: sum, Mode: th.Mode & 0o777}
		}
		if strings.HasPrefix(name, "data.tar") {
			sawData = true
		} else {
			sawControl = true
		}
	}
	if !sawData || !sawControl {
		return nil, fmt.Errorf("%s: not a deb: data archive %v, control archive %v", file, sawData, sawControl)
	}
	for _, c := range conffiles {
		pf, ok := out[c]
		if !ok {
			return nil, fmt.Errorf("%s: conffiles lists %s, which the package does not install", file, c)
		}
		pf.Config = true
		out[c] = pf
	}
	return out, nil
}

// RPM header tags and types (rpm's include/rpm/rpmtag.h).
const (
	rpmTagFileFlags         = 1037 // INT32 per file
	rpmTagDirIndexes        = 1116 // INT32 per file
	rpmTagBaseNames         = 1117 // STRING_ARRAY per file
	rpmTagDirNames          = 1118 // STRING_ARRAY
	rpmTagPayloadFormat     = 1124 // STRING, "cpio"
	rpmTagPayloadCompressor = 1125 // STRING, "gzip"
	rpmTypeInt32            = 4
	rpmTypeString           = 6
	rpmTypeStringArray      = 8
	rpmFileConfig           = 1 // RPMFILE_CONFIG
)

// rpmHeader is one parsed header structure: its entries by tag.
type rpmHeader map[int32]rpmEntry

type rpmEntry struct {
	typ   int32
	count int32
	data  []byte // the store from the entry's offset on
}

func (h rpmHeader) int32s(tag int32) ([]int32, error) {
	e, ok := h[tag]
	if !ok {
		return nil, fmt.Errorf("no tag %d", tag)
	}
	if e.typ != rpmTypeInt32 || int(e.count)*4 > len(e.data) {
		return nil, fmt.Errorf("tag %d: type %d count %d, want INT32 within the store", tag, e.typ, e.count)
	}
	out := make([]int32, e.count)
	for i := range out {
		out[i] = int32(binary.BigEndian.Uint32(e.data[4*i:]))
	}
	return out, nil
}

func (h rpmHeader) strings(tag int32) ([]string, error) {
	e, ok := h[tag]
	if !ok {
		return nil, fmt.Errorf("no tag %d", tag)
	}
	if e.typ != rpmTypeString && e.typ != rpmTypeStringArray {
		return nil, fmt.Errorf("tag %d: type %d, want STRING or STRING_ARRAY", tag, e.typ)
	}
	out := make([]string, 0, e.count)
	rest := e.data
	for i := int32(0); i < e.count; i++ {
		s, after, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			return nil, fmt.Errorf("tag %d: string %d not terminated within the store", tag, i)
		}
		out = append(out, string(s))
		rest = after
	}
	return out, nil
}

// readRPMHeader reads one header structure from r; it returns the header and its length in bytes.
func readRPMHeader(r io.Reader) (rpmHeader, int, error) {
	var pre [16]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, 0, err
	}
	if !bytes.Equal(pre[:4], []byte{0x8e, 0xad, 0xe8, 0x01}) {
		return nil, 0, fmt.Errorf("header magic %x, want 8eade801", pre[:4])
	}
	n, size := binary.BigEndian.Uint32(pre[8:]), binary.BigEndian.Uint32(pre[12:])
	if n > 1<<16 || size > 1<<28 {
		return nil, 0, fmt.Errorf("header of %d entries and %d bytes: implausible", n, size)
	}
	buf := make([]byte, 16*int(n)+int(size))
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, 0, err
	}
	store := buf[16*n:]
	h := rpmHeader{}
	for i := 0; i < int(n); i++ {
		e := buf[16*i:]
		tag, typ := int32(binary.BigEndian.Uint32(e)), int32(binary.BigEndian.Uint32(e[4:]))
		off, count := binary.BigEndian.Uint32(e[8:]), int32(binary.BigEndian.Uint32(e[12:]))
		if off > uint32(len(store)) || count < 0 {
			return nil, 0, fmt.Errorf("tag %d: offset %d count %d outside the store of %d bytes", tag, off, count, len(store))
		}
		h[tag] = rpmEntry{typ, count, store[off:]}
	}
	return h, 16 + len(buf), nil
}

// ReadRPM reads the .rpm at file: its payload's regular files, with RPMFILE_CONFIG marked.
func ReadRPM(file string) (PackageContents, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReader(f)
	var lead [96]byte
	if _, err := io.ReadFull(r, lead[:]); err != nil {
		return nil, fmt.Errorf("%s: lead: %w", file, err)
	}
	if !bytes.Equal(lead[:4], []byte{0xed, 0xab, 0xee, 0xdb}) {
		return nil, fmt.Errorf("%s: not an rpm: lead magic %x, want edabeedb", file, lead[:4])
	}
	_, n, err := readRPMHeader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: signature header: %w", file, err)
	}
	if _, err := io.CopyN(io.Discard, r, int64((8-n%8)%8)); err != nil {
		return nil, fmt.Errorf("%s: signature padding: %w", file, err)
	}
	h, _, err := readRPMHeader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", file, err)
	}
	if s, err := h.strings(rpmTagPayloadFormat); err != nil || len(s) != 1 || s[0] != "cpio" {
		return nil, fmt.Errorf("%s: payload format %q (%v), want cpio", file, s, err)
	}
	if s, err := h.strings(rpmTagPayloadCompressor); err != nil || len(s) != 1 || s[0] != "gzip" {
		return nil, fmt.Errorf("%s: payload compressor %q (%v): only gzip is read (.goreleaser.yaml states gzip)", file, s, err)
	}
	flags, err1 := h.int32s(rpmTagFileFlags)
	dirIdx, err2 := h.int32s(rpmTagDirIndexes)
	base, err3 := h.strings(rpmTagBaseNames)
	dirs, err4 := h.strings(rpmTagDirNames)
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, fmt.Errorf("%s: file list: %w", file, err)
	}
	if len(flags) != len(base) || len(dirIdx) != len(base) {
		return nil, fmt.Errorf("%s: %d file flags and %d dir indexes for %d files", file, len(flags), len(dirIdx), len(base))
	}
	config := map[string]bool{}
	for i, b := range base {
		if dirIdx[i] < 0 || int(dirIdx[i]) >= len(dirs) {
			return nil, fmt.Errorf("%s: file %s: dir index %d of %d", file, b, dirIdx[i], len(dirs))
		}
		config[cleanName(dirs[dirIdx[i]]+b)] = flags[i]&rpmFileConfig != 0
	}
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%s: payload: %w", file, err)
	}
	out := PackageContents{}
	cr := cpio.NewReader(zr)
	for {
		ch, err := cr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: payload: %w", file, err)
		}
		if !ch.Mode.IsRegular() {
			continue
		}
		name := cleanName(ch.Name)
		isConfig, listed := config[name]
		if !listed {
			return nil, fmt.Errorf("%s: payload holds %s, which the header does not list", file, name)
		}
		sum, err := digest(cr)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", file, name, err)
		}
		out[name] = PackagedFile{SHA256: sum, Mode: int64(ch.Mode.Perm()), Config: isConfig}
	}
	return out, nil
}
