package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Fake credentials, generated at test time from a seed so that no
// format-valid token is ever committed (as gitleaks' rule tests do).

const (
	alnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	hexLow = "0123456789abcdef"
	b64    = alnum + "+/"
	urlTok = alnum + "_-"
	awsID  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
)

type fakeGen struct{ r *rand.Rand }

func newFake(seed uint64) *fakeGen {
	return &fakeGen{rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *fakeGen) str(set string, n int) string {
	var b strings.Builder
	for range n {
		b.WriteByte(set[g.r.IntN(len(set))])
	}
	return b.String()
}

func (g *fakeGen) uuid() string {
	h := g.str(hexLow, 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

// ngcLegacy is base64("<26 alnum>:<uuid>") with no '+' or '/' (84 chars).
func (g *fakeGen) ngcLegacy() string {
	for {
		s := base64.StdEncoding.EncodeToString([]byte(g.str(alnum, 26) + ":" + g.uuid()))
		if !strings.ContainsAny(s, "+/=") && len(s) == 84 {
			return s
		}
	}
}

// neptune is a legacy Neptune API token: base64 of its JSON credentials.
func (g *fakeGen) neptune() string {
	js := fmt.Sprintf(`{"api_address":"https://app.neptune.ai","api_url":"https://app.neptune.ai","api_key":"%s"}`, g.uuid())
	return base64.StdEncoding.EncodeToString([]byte(js))
}

func (g *fakeGen) azureKey() string { return g.str(b64, 86) + "==" }

// pemKey is a real, freshly generated EC key in PKCS#8 PEM: format-valid and
// never written to disk.
func (g *fakeGen) pemKey() string {
	k, err := ecdsa.GenerateKey(elliptic.P256(), g)
	if err != nil {
		panic(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		panic(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
}

// Read makes fakeGen an io.Reader for key generation.
func (g *fakeGen) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(g.r.Uint32())
	}
	return len(p), nil
}

func (g *fakeGen) hex(n int) string {
	b := make([]byte, (n+1)/2)
	g.Read(b)
	return hex.EncodeToString(b)[:n]
}
