package gogen

import (
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/codegen"
)

func parse(t *testing.T, src string) *codegen.Message {
	t.Helper()
	m, err := codegen.Parse("x.def", src)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

const pingRequest = "message PingRequest\nkind request\napikey 1009\nversions 0\nflexible 0+\nfield NodeId int32 versions=0+\nfield Payload []Item versions=0+ {\nfield ItemId int8 versions=0+\n}\n"

// TestRPCPairs: a request generates only with its response of the same
// API key, and the other way round.
func TestRPCPairs(t *testing.T) {
	req := parse(t, pingRequest)
	for name, msgs := range map[string][]*codegen.Message{
		"request alone":           {req},
		"response of another key": {req, parse(t, "message PingResponse\nkind response\napikey 1010\nversions 0\nflexible 0+\n")},
		"response alone":          {parse(t, "message PingResponse\nkind response\napikey 1009\nversions 0\nflexible 0+\n")},
	} {
		if _, err := Generate("p", msgs); err == nil || !strings.Contains(err.Error(), "needs a") {
			t.Errorf("%s: Generate error = %v, want a missing pair", name, err)
		}
	}
	files, err := Generate("p", []*codegen.Message{req, parse(t, "message PingResponse\nkind response\napikey 1009\nversions 0\nflexible 0+\n")})
	if err != nil {
		t.Fatal(err)
	}
	src := string(files["ping_request_gen.go"])
	for _, want := range []string{
		"NodeID int32", "type PingRequestItem struct", "ItemID int8",
		"func (s *PingRequest) ResponseKind() kmsg.Response", "func (*PingRequest) Key() int16 { return 1009 }",
	} {
		if !strings.Contains(src, want) {
			t.Errorf("ping_request_gen.go lacks %q", want)
		}
	}
	if strings.Contains(src, "UnknownTags") {
		t.Error("an RPC message keeps unknown tags; its decoder skips them")
	}
	if req.Fields[0].Name != "NodeId" {
		t.Errorf("Generate renamed the caller's field to %s", req.Fields[0].Name)
	}
}
