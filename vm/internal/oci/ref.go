package oci

import (
	"fmt"
	"net"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// LayoutPrefix marks a reference to an OCI image layout directory: "oci-layout:DIR[:TAG][@DIGEST]".
const LayoutPrefix = "oci-layout:"

// Ref is a parsed image reference: a registry reference "HOST/REPO[:TAG][@DIGEST]" or an OCI layout
// "oci-layout:DIR[:TAG][@DIGEST]". A tag with a digest pins the tag: pulling fails if the tag now names another
// digest.
type Ref struct {
	Raw    string  // as given
	Layout string  // layout directory; "" for a registry reference
	Tag    string  // tag ("latest" when neither a tag nor a digest is given)
	Digest v1.Hash // pinned digest; zero when none
	Repo   name.Repository
}

// IsRef reports whether a --kernels item names an image rather than a manifest kernel id: it starts with
// LayoutPrefix or holds a '/' (ids never do).
func IsRef(s string) bool { return strings.HasPrefix(s, LayoutPrefix) || strings.Contains(s, "/") }

// ParseRef parses s. Registries on loopback (127.0.0.1, ::1, localhost) are reached over plain HTTP
// (name.Insecure); every other registry over HTTPS.
func ParseRef(s string) (Ref, error) {
	r := Ref{Raw: s}
	base, dig, hasDigest := strings.Cut(s, "@")
	if hasDigest {
		h, err := v1.NewHash(dig)
		if err != nil {
			return r, fmt.Errorf("reference %s: bad digest: %w", s, err)
		}
		r.Digest = h
	}
	if dir, ok := strings.CutPrefix(base, LayoutPrefix); ok {
		if i := strings.LastIndex(dir, ":"); i > strings.LastIndex(dir, "/") {
			dir, r.Tag = dir[:i], dir[i+1:]
		}
		if dir == "" {
			return r, fmt.Errorf("reference %s: no directory after %s", s, LayoutPrefix)
		}
		if r.Tag == "" && !hasDigest {
			r.Tag = "latest"
		}
		abs, err := filepath.Abs(dir)
		r.Layout = abs
		return r, err
	}
	if i := strings.LastIndex(base, ":"); i > strings.LastIndex(base, "/") {
		base, r.Tag = base[:i], base[i+1:]
	} else if !hasDigest {
		r.Tag = "latest"
	}
	repo, err := name.NewRepository(base)
	if err != nil {
		return r, fmt.Errorf("reference %s: %w", s, err)
	}
	if loopback(repo.RegistryStr()) {
		repo, err = name.NewRepository(base, name.Insecure)
		if err != nil {
			return r, fmt.Errorf("reference %s: %w", s, err)
		}
	}
	if r.Tag != "" {
		if _, err := name.NewTag(base + ":" + r.Tag); err != nil {
			return r, fmt.Errorf("reference %s: %w", s, err)
		}
	}
	r.Repo = repo
	return r, nil
}

func loopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// String returns the reference as given.
func (r Ref) String() string { return r.Raw }

// fetchRef is the registry reference to fetch: the tag when there is one (so a moved tag is seen), else the digest.
func (r Ref) fetchRef() name.Reference {
	if r.Tag != "" {
		return r.Repo.Tag(r.Tag)
	}
	return r.Repo.Digest(r.Digest.String())
}
