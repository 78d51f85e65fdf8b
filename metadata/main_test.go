package metadata

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine a test started is
// still running when they end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
