package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// AdminErrorAnswer returns the error response of a claimed admin request
// ([ClaimedAPI]) carrying code, as Kafka's getErrorResponse of that
// request builds it: every topic or resource the request names, each
// with code (and msg where the schema has a message). ok is false for
// an API it cannot answer so: the caller closes the connection instead,
// which is what Kafka does with a request it cannot serve. The response has req's version.
func AdminErrorAnswer(req kmsg.Request, code int16, msg string) (_ kmsg.Response, ok bool) {
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	switch r := req.(type) {
	case *kmsg.CreateTopicsRequest:
		resp.(*kmsg.CreateTopicsResponse).Topics = rowsOf(r.Topics, func(t kmsg.CreateTopicsRequestTopic) kmsg.CreateTopicsResponseTopic {
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, code, &msg
			return rt
		})
	case *kmsg.DeleteTopicsRequest:
		out := resp.(*kmsg.DeleteTopicsResponse)
		// Up to v5 the topics are names, from v6 on names or ids.
		for _, name := range r.TopicNames {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = &name, code
			out.Topics = append(out.Topics, rt)
		}
		out.Topics = append(out.Topics, rowsOf(r.Topics, func(t kmsg.DeleteTopicsRequestTopic) kmsg.DeleteTopicsResponseTopic {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode = t.Topic, t.TopicID, code
			return rt
		})...)
	case *kmsg.CreatePartitionsRequest:
		resp.(*kmsg.CreatePartitionsResponse).Topics = rowsOf(r.Topics, func(t kmsg.CreatePartitionsRequestTopic) kmsg.CreatePartitionsResponseTopic {
			return kmsg.CreatePartitionsResponseTopic{Topic: t.Topic, ErrorCode: code, ErrorMessage: &msg}
		})
	case *kmsg.IncrementalAlterConfigsRequest:
		resp.(*kmsg.IncrementalAlterConfigsResponse).Resources = rowsOf(r.Resources, func(res kmsg.IncrementalAlterConfigsRequestResource) kmsg.IncrementalAlterConfigsResponseResource {
			return kmsg.IncrementalAlterConfigsResponseResource{ResourceType: res.ResourceType, ResourceName: res.ResourceName, ErrorCode: code, ErrorMessage: &msg}
		})
	case *kmsg.AlterConfigsRequest:
		resp.(*kmsg.AlterConfigsResponse).Resources = rowsOf(r.Resources, func(res kmsg.AlterConfigsRequestResource) kmsg.AlterConfigsResponseResource {
			return kmsg.AlterConfigsResponseResource{ResourceType: res.ResourceType, ResourceName: res.ResourceName, ErrorCode: code, ErrorMessage: &msg}
		})
	default:
		return nil, false
	}
	return resp, true
}

// rowsOf maps the rows a request names to the rows of its answer.
func rowsOf[In, Out any](in []In, row func(In) Out) []Out {
	out := make([]Out, 0, len(in))
	for _, x := range in {
		out = append(out, row(x))
	}
	return out
}
