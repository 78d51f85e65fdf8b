package wire

import (
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka's three answer shapes of UpdateFeatures (QuorumController.updateFeatures,
// UpdateFeaturesResponse.createWithErrors).
func TestAnswerUpdateFeatures(t *testing.T) {
	req := func(version int16) *kmsg.UpdateFeaturesRequest {
		r := kmsg.NewPtrUpdateFeaturesRequest()
		r.Version = version
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel = "kraft.version", 1
		r.FeatureUpdates = append(r.FeatureUpdates, u)
		return r
	}
	refused := &FeatureUpdateError{Message: "Invalid upgrade of kraft.version to 1 because not all of the voters support it"}
	cases := []struct {
		name    string
		version int16
		err     error
		code    int16
		msg     string // "" for null
		results int
	}{
		{"success v1 lists each feature", 1, nil, 0, "", 1},
		{"success v2 has no results", 2, nil, 0, "", 0},
		{"a refused feature", 1, refused, kerr.InvalidUpdateVersion.Code,
			"The update failed for all features since the following feature had an error: Invalid upgrade of kraft.version to 1 because not all of the voters support it", 0},
		{"a wrapped refusal", 2, fmt.Errorf("raft: upgrade: %w", refused), kerr.InvalidUpdateVersion.Code,
			"The update failed for all features since the following feature had an error: Invalid upgrade of kraft.version to 1 because not all of the voters support it", 0},
		{"not the leader", 2, fmt.Errorf("%w (leader 2)", ErrNotLeader), kerr.NotController.Code, kerr.NotController.Description, 0},
		{"leader lost", 2, ErrFencedLeaderEpoch, kerr.NotController.Code, kerr.NotController.Description, 0},
		{"shutting down", 2, ErrShuttingDown, kerr.NotController.Code, kerr.NotController.Description, 0},
		{"timed out", 2, ErrChangeTimedOut, kerr.RequestTimedOut.Code, kerr.RequestTimedOut.Description, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := AnswerUpdateFeatures(req(c.version), c.err)
			msg := ""
			if resp.ErrorMessage != nil {
				msg = *resp.ErrorMessage
			}
			if resp.ErrorCode != c.code || msg != c.msg || len(resp.Results) != c.results || resp.Version != c.version {
				t.Errorf("AnswerUpdateFeatures(v%d, %v) = code %d %q, %d results, v%d; want code %d %q, %d results",
					c.version, c.err, resp.ErrorCode, msg, len(resp.Results), resp.Version, c.code, c.msg, c.results)
			}
			for _, r := range resp.Results {
				if r.Feature != "kraft.version" || r.ErrorCode != 0 || r.ErrorMessage == nil || *r.ErrorMessage != "NONE" {
					t.Errorf("result %+v, want kraft.version NONE \"NONE\"", r)
				}
			}
		})
	}
}

// UpdateFeaturesError reads back what AnswerUpdateFeatures wrote.
func TestUpdateFeaturesErrorRoundTrip(t *testing.T) {
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.Version = 1
	u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
	u.Feature, u.MaxVersionLevel = "kraft.version", 1
	req.FeatureUpdates = append(req.FeatureUpdates, u)
	refused := &FeatureUpdateError{Message: "Invalid upgrade of kraft.version to 1 because not all of the voters support it"}
	if err := UpdateFeaturesError(AnswerUpdateFeatures(req, nil)); err != nil {
		t.Errorf("success read back as %v", err)
	}
	fe, ok := errors.AsType[*FeatureUpdateError](UpdateFeaturesError(AnswerUpdateFeatures(req, refused)))
	if !ok || fe.Message != refused.Message {
		t.Errorf("refusal read back as %v, want %q", fe, refused.Message)
	}
	if err := UpdateFeaturesError(AnswerUpdateFeatures(req, ErrShuttingDown)); !errors.Is(err, ErrNotLeader) {
		t.Errorf("NOT_CONTROLLER read back as %v, want ErrNotLeader", err)
	}
	if err := UpdateFeaturesError(AnswerUpdateFeatures(req, ErrChangeTimedOut)); !errors.Is(err, ErrChangeTimedOut) {
		t.Errorf("REQUEST_TIMED_OUT read back as %v", err)
	}
	perFeature := kmsg.NewPtrUpdateFeaturesResponse()
	r := kmsg.NewUpdateFeaturesResponseResult()
	r.Feature, r.ErrorCode = "kraft.version", kerr.InvalidUpdateVersion.Code
	perFeature.Results = append(perFeature.Results, r)
	if fe, ok := errors.AsType[*FeatureUpdateError](UpdateFeaturesError(perFeature)); !ok || fe.Message != kerr.InvalidUpdateVersion.Description {
		t.Errorf("a v1 feature result read back as %v", fe)
	}
}
