package kraft_test

import (
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/krabka-go/krabka/internal/kraft/krafttest"
)

// TestInteraction runs the scripted scenarios in testdata/. Regenerate the
// expected output with -rewrite, then read every changed line: the
// transcript is the specification of the behaviour it shows.
func TestInteraction(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		env := krafttest.NewInteractionEnv()
		datadriven.RunTest(t, path, func(t *testing.T, td *datadriven.TestData) string {
			return env.Handle(t, td)
		})
	})
}
