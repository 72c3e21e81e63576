package attest

import (
	"bufio"
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// ChecksumsFile is the name of the checksums file a release signs; SignatureFile its signature's.
const (
	ChecksumsFile = "checksums.txt"
	SignatureFile = ChecksumsFile + ".sig"
	PublicKeyFile = "cosign.pub"
)

// ErrNoSignature is returned by VerifyFile when the signature file does not exist.
var ErrNoSignature = errors.New("no signature")

// WriteChecksums writes sums (name → hex sha256) to path in sha256sum's format, "<sha256>  <name>" per
// line, sorted by name: the format goreleaser's checksums.txt has and `sha256sum -c` reads.
func WriteChecksums(path string, sums map[string]string) error {
	names := make([]string, 0, len(sums))
	for n := range sums {
		if strings.ContainsAny(n, "\n\r") || n == "" {
			return fmt.Errorf("attest: bad artifact name %q", n)
		}
		names = append(names, n)
	}
	sort.Strings(names)
	var b bytes.Buffer
	for _, n := range names {
		if !isHex(sums[n], 64) {
			return fmt.Errorf("attest: %s: sha256 %q is not 64 hex characters", n, sums[n])
		}
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("attest: %w", err)
	}
	return nil
}

// ReadChecksums reads a sha256sum-format file into name → hex sha256. Errors: unreadable; a line that is
// not "<64 hex>  <name>" (or "<64 hex> *<name>"); a name listed twice.
func ReadChecksums(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" {
			continue
		}
		sum, name, ok := strings.Cut(line, " ")
		name = strings.TrimPrefix(strings.TrimPrefix(name, " "), "*")
		if !ok || !isHex(sum, 64) || name == "" {
			return nil, fmt.Errorf("%s:%d: not \"<sha256>  <name>\": %q", path, n, line)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%s:%d: %s listed twice", path, n, name)
		}
		out[name] = sum
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// GenerateKey makes an ECDSA P-256 key pair, the kind `cosign generate-key-pair` makes: the private key
// as unencrypted PKCS#8 PEM ("PRIVATE KEY"), the public key as PKIX PEM ("PUBLIC KEY"), which
// `cosign verify-blob --key` reads.
func GenerateKey() (privPEM, pubPEM []byte, err error) {
	privPEM, pubPEM, err = cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), nil)
	if err != nil {
		return nil, nil, fmt.Errorf("attest: generating a key: %w", err)
	}
	return privPEM, pubPEM, nil
}

// passFunc gives a cosign-encrypted private key ("ENCRYPTED SIGSTORE PRIVATE KEY") the password in
// $COSIGN_PASSWORD, as cosign does; unencrypted PEM keys ignore it.
func passFunc(bool) ([]byte, error) { return []byte(os.Getenv("COSIGN_PASSWORD")), nil }

// SignFile signs the file at path with the PEM private key keyPEM (ECDSA P-256 with SHA-256, a key made
// by GenerateKey or `cosign generate-key-pair`) and returns the signature as `cosign sign-blob
// --key` writes it: base64 of the ASN.1 DER signature. It returns the PEM public key too. Errors: the key
// does not parse or is not ECDSA; the file cannot be read.
func SignFile(keyPEM []byte, path string) (sig, pubPEM []byte, err error) {
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(keyPEM, passFunc)
	if err != nil {
		return nil, nil, fmt.Errorf("attest: the signing key: %w", err)
	}
	ec, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return nil, nil, fmt.Errorf("attest: the signing key is %T, want an ECDSA key (cosign generate-key-pair)", priv)
	}
	sv, err := signature.LoadECDSASignerVerifier(ec, crypto.SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("attest: %w", err)
	}
	msg, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("attest: %w", err)
	}
	raw, err := sv.SignMessage(bytes.NewReader(msg))
	if err != nil {
		return nil, nil, fmt.Errorf("attest: signing %s: %w", path, err)
	}
	pub, err := cryptoutils.MarshalPublicKeyToPEM(ec.Public())
	if err != nil {
		return nil, nil, fmt.Errorf("attest: %w", err)
	}
	return []byte(base64.StdEncoding.EncodeToString(raw)), pub, nil
}

// VerifyFile checks the cosign sign-blob signature in sigPath (base64 DER, as SignFile writes) over the
// file at path with the PEM public key pubPEM. Errors, each one line: ErrNoSignature (sigPath missing);
// the key does not parse; the signature is not base64; it does not verify (a wrong key, or a changed
// file).
func VerifyFile(pubPEM []byte, path, sigPath string) error {
	b64, err := os.ReadFile(sigPath)
	if os.IsNotExist(err) {
		return fmt.Errorf("%w: %s does not exist", ErrNoSignature, sigPath)
	}
	if err != nil {
		return err
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(b64)))
	if err != nil {
		return fmt.Errorf("%s is not a base64 signature: %w", sigPath, err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		return fmt.Errorf("the public key: %w", err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("the public key: %w", err)
	}
	msg, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(msg)); err != nil {
		return fmt.Errorf("%s does not verify %s with this key (another key signed it, or the file changed): %v", sigPath, path, err)
	}
	return nil
}
