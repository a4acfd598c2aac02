package blobsig

import (
	"crypto"
	"crypto/ecdsa"
	"time"
)

var zeroTime time.Time

// hashFor is the hash cosign uses with a key: SHA-256, except the curve's
// own hash for P-384 and P-521 keys.
func hashFor(k crypto.PublicKey) crypto.Hash {
	if e, ok := k.(*ecdsa.PublicKey); ok {
		switch e.Curve.Params().BitSize {
		case 384:
			return crypto.SHA384
		case 521:
			return crypto.SHA512
		}
	}
	return crypto.SHA256
}
