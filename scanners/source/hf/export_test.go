//go:build !mlwarden_sbatch

package hf

import (
	"context"
	"time"
)

// SetSleep replaces how the client waits between tries.
func SetSleep(o *Options, f func(context.Context, time.Duration) error) { o.sleep = f }

// FindToken is findToken, for tests.
var FindToken = findToken

// TokenValue is the token's value, for tests.
func TokenValue(t Token) string { return t.value }
