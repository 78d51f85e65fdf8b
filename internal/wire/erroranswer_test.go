package wire

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestErrorAnswerCoversTheVersionTable: every API of the version table, at
// every version we serve, gets its own response type at the request's
// version with the code at the top level, and the answer encodes.
func TestErrorAnswerCoversTheVersionTable(t *testing.T) {
	code := kerr.IllegalSaslState.Code
	for _, api := range SupportedAPIs() {
		for v := api.Min; v <= api.Max; v++ {
			req := newRequest(api.Key)
			req.SetVersion(v)
			resp := ErrorAnswer(req, code, "refused")
			if resp.Key() != api.Key || resp.GetVersion() != v {
				t.Errorf("%s v%d: answer key %d v%d", api.Name, v, resp.Key(), resp.GetVersion())
			}
			if got := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode").Int(); got != int64(code) {
				t.Errorf("%s v%d: ErrorCode %d, want %d", api.Name, v, got, code)
			}
			if b := AppendResponse(nil, 1, resp); len(b) < 8 {
				t.Errorf("%s v%d: %d-byte frame", api.Name, v, len(b))
			}
		}
	}
}
