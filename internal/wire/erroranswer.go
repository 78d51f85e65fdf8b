package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// ErrorAnswer returns req's own error response carrying code, as Kafka's
// AbstractRequest.getErrorResponse of each request builds it: the
// top-level error code, and msg where the response schema has a message;
// a Fetch below version 13 also repeats the code in every partition asked
// for, with the offsets unknown (-1); the private RPCs carry no leader
// hint (-1); an ApiVersions answer lists no APIs. It is what a listener
// sends for a request it refuses without serving (an authorization
// failure, a request in the middle of a SASL exchange). The response has
// req's version; the caller owns it.
func ErrorAnswer(req kmsg.Request, code int16, msg string) kmsg.Response {
	resp := req.ResponseKind()
	switch r := resp.(type) {
	case *kmsg.VoteResponse:
		r.ErrorCode = code
	case *kmsg.BeginQuorumEpochResponse:
		r.ErrorCode = code
	case *kmsg.EndQuorumEpochResponse:
		r.ErrorCode = code
	case *kmsg.FetchResponse:
		r.ErrorCode = code
		if req.GetVersion() < 13 {
			for _, rt := range req.(*kmsg.FetchRequest).Topics {
				t := kmsg.NewFetchResponseTopic()
				t.Topic, t.TopicID = rt.Topic, rt.TopicID
				for _, rp := range rt.Partitions {
					p := kmsg.NewFetchResponseTopicPartition()
					p.Partition, p.ErrorCode = rp.Partition, code
					p.HighWatermark, p.LastStableOffset, p.LogStartOffset, p.PreferredReadReplica = -1, -1, -1, -1
					t.Partitions = append(t.Partitions, p)
				}
				r.Topics = append(r.Topics, t)
			}
		}
	case *kmsg.FetchSnapshotResponse:
		r.ErrorCode = code
	case *kmsg.DescribeQuorumResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.AddRaftVoterResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.RemoveRaftVoterResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.UpdateRaftVoterResponse:
		r.ErrorCode = code
	case *kmsg.DescribeClusterResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.UpdateFeaturesResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.ControllerRegistrationResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *kmsg.ApiVersionsResponse:
		r.ErrorCode = code
	case *kmsg.SASLHandshakeResponse:
		r.ErrorCode = code
	case *kmsg.SASLAuthenticateResponse:
		r.ErrorCode, r.ErrorMessage = code, &msg
	case *SubmitChangeResponse:
		r.ErrorCode, r.ErrorMessage, r.LeaderID, r.LeaderEpoch = code, &msg, -1, -1
	case *ReadImageResponse:
		r.ErrorCode, r.ErrorMessage, r.LeaderID, r.LeaderEpoch = code, &msg, -1, -1
	case *MetadataFetchResponse:
		r.ErrorCode = code
	default:
		// Every API of the version table has a case above; a request
		// outside it never decodes.
		panic("wire: invariant: ErrorAnswer for API key outside the version table")
	}
	return resp
}
