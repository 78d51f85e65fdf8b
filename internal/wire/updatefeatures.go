package wire

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// UpdateFeatures (API 57, KIP-584) on a controller: Kafka's
// ControllerApis.handleUpdateFeatures hands the request to
// QuorumController.updateFeatures, which applies the updates atomically.
// The answer has one of three shapes:
//
//   - success: NONE, and at versions 0 and 1 one NONE result per
//     requested feature, its message "NONE" (version 2 has no results);
//   - a feature refused: its code at the top level with the message
//     "The update failed for all features since the following feature had
//     an error: " and the feature's reason, and no results;
//   - any other failure (not the active controller, a timeout): its code
//     and default message at the top level, and no results.

// featureErrorPrefix is the sentence QuorumController.updateFeatures puts
// before the reason of the feature that failed.
const featureErrorPrefix = "The update failed for all features since the following feature had an error: "

// FeatureUpdateError is the refusal of one feature of an UpdateFeatures
// request. Its Message is the reason as Kafka's FeatureControlManager or
// KafkaRaftClient words it, for example "Invalid update version 2 for
// feature kraft.version. Local controller 1 only supports versions 0-1".
// It matches [ErrInvalidFeatureUpdate].
type FeatureUpdateError struct {
	Message string
}

// Error returns the reason.
func (e *FeatureUpdateError) Error() string { return e.Message }

// Is reports whether target is [ErrInvalidFeatureUpdate].
func (e *FeatureUpdateError) Is(target error) bool { return target == ErrInvalidFeatureUpdate }

// AnswerUpdateFeatures builds the answer to req for its outcome err: nil
// for success; a [*FeatureUpdateError] for a refused feature
// (INVALID_UPDATE_VERSION); a node that is not, or is no longer, the
// active controller (ErrNotLeader, ErrLeaderUnknown, ErrShuttingDown,
// ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch) NOT_CONTROLLER, as Kafka's
// QuorumController answers; anything else the code [CodeForError] gives.
func AnswerUpdateFeatures(req *kmsg.UpdateFeaturesRequest, err error) *kmsg.UpdateFeaturesResponse {
	resp := req.ResponseKind().(*kmsg.UpdateFeaturesResponse)
	if err == nil {
		if req.Version <= 1 {
			for _, u := range req.FeatureUpdates {
				r := kmsg.NewUpdateFeaturesResponseResult()
				// Errors.NONE's message is its name.
				r.Feature, r.ErrorMessage = u.Feature, kmsg.StringPtr("NONE")
				resp.Results = append(resp.Results, r)
			}
		}
		return resp
	}
	if fe, ok := errors.AsType[*FeatureUpdateError](err); ok {
		msg := featureErrorPrefix + fe.Message
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidUpdateVersion.Code, &msg
		return resp
	}
	code := CodeForError(err)
	for _, c := range []error{ErrNotLeader, ErrLeaderUnknown, ErrShuttingDown, ErrFencedLeaderEpoch, ErrUnknownLeaderEpoch} {
		if errors.Is(err, c) {
			code = kerr.NotController.Code
		}
	}
	resp.ErrorCode = code
	if ke, ok := kerr.ErrorForCode(code).(*kerr.Error); ok {
		msg := ke.Description
		resp.ErrorMessage = &msg
	}
	return resp
}

// UpdateFeaturesError is the outcome an UpdateFeatures answer reports, as
// [AnswerUpdateFeatures] builds it: nil for NONE (the top-level code and
// every result's), a [*FeatureUpdateError] with the feature's reason for
// INVALID_UPDATE_VERSION, ErrNotLeader for NOT_CONTROLLER,
// ErrChangeTimedOut for REQUEST_TIMED_OUT (the upgrade did not commit in
// time), and the code's error ([ErrorForCode]) for any other.
func UpdateFeaturesError(resp *kmsg.UpdateFeaturesResponse) error {
	code, msg := resp.ErrorCode, resp.ErrorMessage
	for _, r := range resp.Results {
		if code == 0 && r.ErrorCode != 0 {
			code, msg = r.ErrorCode, r.ErrorMessage
		}
	}
	switch code {
	case 0:
		return nil
	case kerr.InvalidUpdateVersion.Code:
		reason := kerr.InvalidUpdateVersion.Description
		if msg != nil && *msg != "" {
			reason = strings.TrimPrefix(*msg, featureErrorPrefix)
		}
		return &FeatureUpdateError{Message: reason}
	case kerr.NotController.Code:
		return fmt.Errorf("%w: the node asked is not the active controller", ErrNotLeader)
	case kerr.RequestTimedOut.Code:
		return ErrChangeTimedOut
	}
	return ErrorForCode(code)
}
