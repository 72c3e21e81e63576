// Package registry runs a real OCI distribution registry on loopback for the release pipeline and its
// tests: Debian's docker-registry (distribution 2.8), started with a temporary config that listens on
// 127.0.0.1:<free port> and stores under a given directory. Nothing listens beyond loopback.
package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// DefaultBinary is where Debian's docker-registry package installs the server (`make release-deps`).
const DefaultBinary = "/usr/bin/docker-registry"

// ErrNoBinary is returned by Start when the server binary is not installed.
var ErrNoBinary = errors.New("registry: docker-registry is not installed (apt-get install docker-registry, or `make release-deps`)")

// readyTimeout bounds how long Start waits for /v2/ to answer.
const readyTimeout = 15 * time.Second

// Server is a running registry.
type Server struct {
	// Addr is "127.0.0.1:<port>", the registry host for image references.
	Addr string
	cmd  *exec.Cmd
	done chan error
	log  string
	stop sync.Once
}

// Start runs the registry binary bin (DefaultBinary when "") with its storage and config under dir
// (created if missing), and returns once GET /v2/ answers 200. Errors: ErrNoBinary; no free port; the
// server exits or does not answer within 15 s (the error quotes the end of its log, dir/registry.log).
func Start(bin, dir string) (*Server, error) {
	if bin == "" {
		bin = DefaultBinary
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, ErrNoBinary
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("registry: finding a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := os.MkdirAll(filepath.Join(dir, "storage"), 0o755); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	config := "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: " +
		strconv.Quote(filepath.Join(dir, "storage")) + "\n  delete:\n    enabled: true\nhttp:\n  addr: " + addr + "\n"
	cfg := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	s := &Server{Addr: addr, done: make(chan error, 1), log: filepath.Join(dir, "registry.log")}
	logf, err := os.Create(s.log)
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	defer logf.Close()
	s.cmd = exec.Command(bin, "serve", cfg)
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("registry: starting %s: %w", bin, err)
	}
	go func() { s.done <- s.cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			return nil, fmt.Errorf("registry: %s exited before answering (%v): %s", bin, err, s.tail())
		case <-ctx.Done():
			s.Stop()
			return nil, fmt.Errorf("registry: %s did not answer on %s within %v: %s", bin, addr, readyTimeout, s.tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tail is the end of the server's log, for errors.
func (s *Server) tail() string {
	b, _ := os.ReadFile(s.log)
	if len(b) > 400 {
		b = b[len(b)-400:]
	}
	return string(b)
}

// Stop kills the server and waits for it to exit. Calling it twice is harmless.
func (s *Server) Stop() {
	s.stop.Do(func() {
		s.cmd.Process.Kill()
		<-s.done
	})
}
