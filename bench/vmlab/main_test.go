package vmlab

import (
	"testing"

	"go.uber.org/goleak"
)

// Every VM, capture, client and server a test starts must be gone when the
// tests end.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
