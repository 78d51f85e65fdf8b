package wire

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestClaimedAPIRows(t *testing.T) {
	a, err := ClaimedAPI(kmsg.CreateTopics.Int16(), 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	// CreateTopics is flexible from v5 (CreateTopicsRequest.json).
	if a.Name != "CreateTopics" || a.Min != 2 || a.Max != 7 || a.FlexibleFrom != 5 || a.LatestUnstable {
		t.Errorf("CreateTopics 2-7: %+v", a)
	}
	// AlterConfigs is flexible from v2; a range below it is still
	// recorded with the first flexible version.
	if a, err := ClaimedAPI(kmsg.AlterConfigs.Int16(), 0, 1); err != nil || a.FlexibleFrom != 2 {
		t.Errorf("AlterConfigs 0-1: %+v, %v", a, err)
	}
	maxCreate := kmsg.NewPtrCreateTopicsRequest().MaxVersion()
	for _, tc := range []struct {
		key, lo, hi int16
		want        string
	}{
		{KeyDescribeQuorum, 0, 1, "served by the controller itself"},
		{KeyAPIVersions, 0, 3, "served by the controller itself"},
		{KeySubmitChange, 0, 0, "served by the controller itself"},
		{999, 0, 0, "not a Kafka API"},
		{-1, 0, 0, "not a Kafka API"},
		{kmsg.CreateTopics.Int16(), 3, 2, "not a range"},
		{kmsg.CreateTopics.Int16(), -1, 2, "not a range"},
		{kmsg.CreateTopics.Int16(), 0, maxCreate + 1, "newer than the newest version decoded"},
	} {
		if _, err := ClaimedAPI(tc.key, tc.lo, tc.hi); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ClaimedAPI(%d, %d, %d): %v, want an error with %q", tc.key, tc.lo, tc.hi, err, tc.want)
		}
	}
}

// TestDecoderClaimed: a claimed API decodes at its claimed versions,
// flexible and not, with the right header version; outside them, and
// without the claim, the connection is to be closed.
func TestDecoderClaimed(t *testing.T) {
	row, err := ClaimedAPI(kmsg.CreateTopics.Int16(), 2, 7)
	if err != nil {
		t.Fatal(err)
	}
	claimed := Decoder{Claimed: []APIVersion{row}}
	for _, v := range []int16{2, 4, 5, 7} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "orders", 3, 1
		req.Topics = append(req.Topics, rt)
		req.TimeoutMillis = 1234
		id := "admin"
		frame, err := AppendRequest(nil, 42, &id, req)
		if err != nil {
			t.Fatal(err)
		}
		frame = frame[4:]
		var got Request
		if err := claimed.Decode(frame, &got); err != nil {
			t.Fatalf("v%d: %v", v, err)
		}
		body, ok := got.Body.(*kmsg.CreateTopicsRequest)
		wantHeader := int16(1)
		if v >= 5 {
			wantHeader = 2
		}
		if !ok || body.Version != v || len(body.Topics) != 1 || body.Topics[0].Topic != "orders" || body.TimeoutMillis != 1234 ||
			got.Header.ClientID != "admin" || got.Header.CorrelationID != 42 || got.Header.Version != wantHeader {
			t.Errorf("v%d: decoded %+v header %+v", v, got.Body, got.Header)
		}
		var plain Decoder
		if err := plain.Decode(frame, &got); err == nil {
			t.Errorf("v%d decoded without the claim", v)
		} else if re, ok := err.(*RequestError); !ok || re.Kind != ErrUnknownAPIKey || !re.Close {
			t.Errorf("v%d without the claim: %v", v, err)
		}
	}
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		frame, _ := AppendRequest(nil, 1, nil, req)
		var got Request
		if err := claimed.Decode(frame[4:], &got); err == nil {
			t.Errorf("v%d outside the claimed 2-7 decoded", v)
		} else if re, ok := err.(*RequestError); !ok || re.Kind != ErrUnsupportedVersion || !re.Close {
			t.Errorf("v%d outside the claim: %v", v, err)
		}
	}
}

func TestAnswerAPIVersionsListsClaims(t *testing.T) {
	create, _ := ClaimedAPI(kmsg.CreateTopics.Int16(), 2, 7)
	incremental, _ := ClaimedAPI(kmsg.IncrementalAlterConfigs.Int16(), 0, 1)
	st := testFeatureState()
	st.Claimed = []APIVersion{incremental, create}
	resp := AnswerAPIVersions(apiVersionsRequest(3, "probe", "1"), st)
	want := len(SupportedAPIs()) + 2
	if len(resp.ApiKeys) != want {
		t.Fatalf("%d api rows, want %d", len(resp.ApiKeys), want)
	}
	found := map[int16][2]int16{}
	for i, k := range resp.ApiKeys {
		if i > 0 && resp.ApiKeys[i-1].ApiKey >= k.ApiKey {
			t.Errorf("rows not sorted by key: %d after %d", k.ApiKey, resp.ApiKeys[i-1].ApiKey)
		}
		found[k.ApiKey] = [2]int16{k.MinVersion, k.MaxVersion}
	}
	if found[create.Key] != [2]int16{2, 7} || found[incremental.Key] != [2]int16{0, 1} {
		t.Errorf("claimed rows %v, %v", found[create.Key], found[incremental.Key])
	}
	if _, ok := found[KeyVote]; !ok {
		t.Error("the version table's rows are missing")
	}
}

// TestAdminErrorAnswer: the error answers of the admin APIs name what the
// request named, each with the code, and encode at every version; an API
// without one is refused.
func TestAdminErrorAnswer(t *testing.T) {
	code := kerr.UnknownServerError.Code
	dt6 := "by-id"
	for v := int16(0); v <= kmsg.NewPtrCreateTopicsRequest().MaxVersion(); v++ {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.SetVersion(v)
		for _, name := range []string{"a", "b"} {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = name
			req.Topics = append(req.Topics, rt)
		}
		resp, ok := AdminErrorAnswer(req, code, "boom")
		r, _ := resp.(*kmsg.CreateTopicsResponse)
		if !ok || r == nil || r.Version != v || len(r.Topics) != 2 || r.Topics[0].Topic != "a" || r.Topics[1].Topic != "b" ||
			r.Topics[1].ErrorCode != code || *r.Topics[1].ErrorMessage != "boom" {
			t.Errorf("CreateTopics v%d: %+v", v, resp)
		}
		AppendResponse(nil, 1, resp)
	}
	del := kmsg.NewPtrDeleteTopicsRequest()
	del.SetVersion(5)
	del.TopicNames = []string{"x", "y"}
	del6 := kmsg.NewPtrDeleteTopicsRequest()
	del6.SetVersion(6)
	dt := kmsg.NewDeleteTopicsRequestTopic()
	dt.Topic = &dt6
	del6.Topics = append(del6.Topics, dt)
	parts := kmsg.NewPtrCreatePartitionsRequest()
	parts.Topics = append(parts.Topics, kmsg.CreatePartitionsRequestTopic{Topic: "p"})
	inc := kmsg.NewPtrIncrementalAlterConfigsRequest()
	inc.Resources = append(inc.Resources, kmsg.IncrementalAlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"})
	alter := kmsg.NewPtrAlterConfigsRequest()
	alter.Resources = append(alter.Resources, kmsg.AlterConfigsRequestResource{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"})
	for _, tc := range []struct {
		req kmsg.Request
		// last is the name and code of the answer's last row.
		last     func(kmsg.Response) (string, int16)
		wantName string
	}{
		{del, func(r kmsg.Response) (string, int16) {
			ts := r.(*kmsg.DeleteTopicsResponse).Topics
			return *ts[len(ts)-1].Topic, ts[len(ts)-1].ErrorCode
		}, "y"},
		{del6, func(r kmsg.Response) (string, int16) {
			ts := r.(*kmsg.DeleteTopicsResponse).Topics
			return *ts[0].Topic, ts[0].ErrorCode
		}, dt6},
		{parts, func(r kmsg.Response) (string, int16) {
			ts := r.(*kmsg.CreatePartitionsResponse).Topics
			return ts[0].Topic, ts[0].ErrorCode
		}, "p"},
		{inc, func(r kmsg.Response) (string, int16) {
			rs := r.(*kmsg.IncrementalAlterConfigsResponse).Resources
			return rs[0].ResourceName, rs[0].ErrorCode
		}, "t"},
		{alter, func(r kmsg.Response) (string, int16) {
			rs := r.(*kmsg.AlterConfigsResponse).Resources
			return rs[0].ResourceName, rs[0].ErrorCode
		}, "1"},
	} {
		resp, ok := AdminErrorAnswer(tc.req, code, "boom")
		if !ok || resp.Key() != tc.req.Key() || resp.GetVersion() != tc.req.GetVersion() {
			t.Errorf("%s: answered %+v, %v", kmsg.NameForKey(tc.req.Key()), resp, ok)
			continue
		}
		if name, got := tc.last(resp); name != tc.wantName || got != code {
			t.Errorf("%s: last row %q with %d, want %q with %d", kmsg.NameForKey(tc.req.Key()), name, got, tc.wantName, code)
		}
	}
	if resp, ok := AdminErrorAnswer(kmsg.NewPtrElectLeadersRequest(), code, "boom"); ok {
		t.Errorf("ElectLeaders answered %+v; want no error answer", resp)
	}
}
