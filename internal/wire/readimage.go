package wire

import "github.com/twmb/franz-go/pkg/kmsg"

// ReadImageRequest (key 1005) asks a node for part of its metadata image:
// the configs of some resources and the ids and partition counts of some
// topics. With Linearizable set the answer reflects every change committed
// before the request arrived (a read barrier on the leader; a follower or
// observer asks the leader for the barrier offset and waits to apply it);
// without it the node answers at once from the image it holds, which may
// be stale.
type ReadImageRequest struct {
	// Version is the message version; only 0 exists.
	Version int16
	// Linearizable asks for a read barrier; false reads the node's current
	// image.
	Linearizable bool
	// ConfigResources names the resources whose configs are wanted.
	ConfigResources []ReadImageResource
	// TopicNames names the topics wanted.
	TopicNames []string
}

// ReadImageResource names one config resource of a [ReadImageRequest].
type ReadImageResource struct {
	// ResourceType is Kafka's ConfigResource type (2 topic, 4 broker, 8
	// broker logger, 16 client metrics, 32 group).
	ResourceType int8
	// ResourceName is the resource's name; "" names the cluster default
	// of a broker resource.
	ResourceName string
}

// NewReadImageRequest returns a ReadImageRequest at version 0.
func NewReadImageRequest() *ReadImageRequest { return &ReadImageRequest{} }

// Key returns KeyReadImage.
func (*ReadImageRequest) Key() int16 { return KeyReadImage }

// MaxVersion returns 0, the only version.
func (*ReadImageRequest) MaxVersion() int16 { return 0 }

// SetVersion sets the version of the request and of its response.
func (m *ReadImageRequest) SetVersion(v int16) { m.Version = v }

// GetVersion returns the version.
func (m *ReadImageRequest) GetVersion() int16 { return m.Version }

// IsFlexible returns true: every version is flexible.
func (*ReadImageRequest) IsFlexible() bool { return true }

// ResponseKind returns an empty response at the request's version.
func (m *ReadImageRequest) ResponseKind() kmsg.Response {
	r := NewReadImageResponse()
	r.Version = m.Version
	return r
}

// AppendTo appends the version-0 encoding of m to dst.
func (m *ReadImageRequest) AppendTo(dst []byte) []byte {
	dst = appendBool(dst, m.Linearizable)
	dst = appendUvarint(dst, uint32(len(m.ConfigResources))+1)
	for _, res := range m.ConfigResources {
		dst = append(dst, byte(res.ResourceType))
		dst = appendCompactString(dst, res.ResourceName)
		dst = appendEmptyTags(dst)
	}
	dst = appendUvarint(dst, uint32(len(m.TopicNames))+1)
	for _, name := range m.TopicNames {
		dst = appendCompactString(dst, name)
	}
	return appendEmptyTags(dst)
}

// ReadFrom decodes src at m.Version into m.
func (m *ReadImageRequest) ReadFrom(src []byte) error {
	if m.Version != 0 {
		return errPrivateVersion("ReadImageRequest", m.Version)
	}
	r := reader{src: src}
	m.Linearizable = r.boolean("Linearizable")
	m.ConfigResources = nil
	if n := r.nonNullArrayLen("ConfigResources", 3); n > 0 {
		m.ConfigResources = make([]ReadImageResource, n)
		for i := range m.ConfigResources {
			res := &m.ConfigResources[i]
			res.ResourceType = r.int8("ResourceType")
			res.ResourceName = r.compactString("ResourceName")
			r.skipTags("ConfigResources tagged fields")
		}
	}
	m.TopicNames = nil
	if n := r.nonNullArrayLen("TopicNames", 1); n > 0 {
		m.TopicNames = make([]string, n)
		for i := range m.TopicNames {
			m.TopicNames[i] = r.compactString("TopicNames element")
		}
	}
	r.skipTags("ReadImageRequest tagged fields")
	return finish("ReadImageRequest", &r)
}

// ReadImageResponse (key 1005) answers a [ReadImageRequest].
type ReadImageResponse struct {
	// Version is the message version; only 0 exists.
	Version int16
	// ThrottleTimeMs is always 0: a controller does not throttle.
	ThrottleTimeMs int32
	// ErrorCode is 0 or a Kafka error code: NOT_LEADER_OR_FOLLOWER (6)
	// with a leader hint when the leader could not confirm its leadership
	// or no leader is known, REQUEST_TIMED_OUT (7) when the barrier or the
	// wait for the image to reach it ran out of time, BROKER_NOT_AVAILABLE
	// (8) from a node shutting down, UNKNOWN_SERVER_ERROR (-1) otherwise.
	ErrorCode int16
	// ErrorMessage describes the error, or is nil.
	ErrorMessage *string
	// LeaderID is the answering node's view of the leader; -1 when
	// unknown.
	LeaderID int32
	// LeaderEpoch is the epoch of that leader; -1 when unknown.
	LeaderEpoch int32
	// Offset is the offset of the last record the returned image
	// includes, -1 for an empty image (or on error).
	Offset int64
	// ConfigResources answers the request's resources in request order.
	ConfigResources []ReadImageResourceConfigs
	// Topics answers the request's topic names in request order.
	Topics []ReadImageTopic
}

// ReadImageResourceConfigs is every config the image holds for one
// resource, sorted by name.
type ReadImageResourceConfigs struct {
	// ResourceType is the requested resource type.
	ResourceType int8
	// ResourceName is the requested resource name.
	ResourceName string
	// Configs holds the resource's configs sorted by name; empty when the
	// image holds none.
	Configs []ReadImageConfig
}

// ReadImageConfig is one config of a [ReadImageResourceConfigs].
type ReadImageConfig struct {
	// Name is the config's name.
	Name string
	// Value is the config's value; nil for a config the image holds
	// without a value.
	Value *string
}

// ReadImageTopic is one topic of a [ReadImageResponse].
type ReadImageTopic struct {
	// Name is the requested topic name.
	Name string
	// TopicID is the topic's id, all zeros when the topic does not exist.
	TopicID [16]byte
	// PartitionCount is the number of partitions, -1 when the topic does
	// not exist.
	PartitionCount int32
}

// NewReadImageResponse returns a version-0 response with its defaults:
// no error, unknown leader, no offset.
func NewReadImageResponse() *ReadImageResponse {
	return &ReadImageResponse{LeaderID: -1, LeaderEpoch: -1, Offset: -1}
}

// Key returns KeyReadImage.
func (*ReadImageResponse) Key() int16 { return KeyReadImage }

// MaxVersion returns 0, the only version.
func (*ReadImageResponse) MaxVersion() int16 { return 0 }

// SetVersion sets the version.
func (m *ReadImageResponse) SetVersion(v int16) { m.Version = v }

// GetVersion returns the version.
func (m *ReadImageResponse) GetVersion() int16 { return m.Version }

// IsFlexible returns true: every version is flexible.
func (*ReadImageResponse) IsFlexible() bool { return true }

// RequestKind returns an empty request at the response's version.
func (m *ReadImageResponse) RequestKind() kmsg.Request {
	return &ReadImageRequest{Version: m.Version}
}

// AppendTo appends the version-0 encoding of m to dst.
func (m *ReadImageResponse) AppendTo(dst []byte) []byte {
	dst = appendInt32(dst, m.ThrottleTimeMs)
	dst = appendInt16(dst, m.ErrorCode)
	dst = appendCompactNullableString(dst, m.ErrorMessage)
	dst = appendInt32(dst, m.LeaderID)
	dst = appendInt32(dst, m.LeaderEpoch)
	dst = appendInt64(dst, m.Offset)
	dst = appendUvarint(dst, uint32(len(m.ConfigResources))+1)
	for _, res := range m.ConfigResources {
		dst = append(dst, byte(res.ResourceType))
		dst = appendCompactString(dst, res.ResourceName)
		dst = appendUvarint(dst, uint32(len(res.Configs))+1)
		for _, c := range res.Configs {
			dst = appendCompactString(dst, c.Name)
			dst = appendCompactNullableString(dst, c.Value)
			dst = appendEmptyTags(dst)
		}
		dst = appendEmptyTags(dst)
	}
	dst = appendUvarint(dst, uint32(len(m.Topics))+1)
	for _, t := range m.Topics {
		dst = appendCompactString(dst, t.Name)
		dst = append(dst, t.TopicID[:]...)
		dst = appendInt32(dst, t.PartitionCount)
		dst = appendEmptyTags(dst)
	}
	return appendEmptyTags(dst)
}

// ReadFrom decodes src at m.Version into m.
func (m *ReadImageResponse) ReadFrom(src []byte) error {
	if m.Version != 0 {
		return errPrivateVersion("ReadImageResponse", m.Version)
	}
	r := reader{src: src}
	m.ThrottleTimeMs = r.int32("ThrottleTimeMs")
	m.ErrorCode = r.int16("ErrorCode")
	m.ErrorMessage = r.compactNullableString("ErrorMessage")
	m.LeaderID = r.int32("LeaderId")
	m.LeaderEpoch = r.int32("LeaderEpoch")
	m.Offset = r.int64("Offset")
	m.ConfigResources = nil
	if n := r.nonNullArrayLen("ConfigResources", 4); n > 0 {
		m.ConfigResources = make([]ReadImageResourceConfigs, n)
		for i := range m.ConfigResources {
			res := &m.ConfigResources[i]
			res.ResourceType = r.int8("ResourceType")
			res.ResourceName = r.compactString("ResourceName")
			res.Configs = nil
			if k := r.nonNullArrayLen("Configs", 3); k > 0 {
				res.Configs = make([]ReadImageConfig, k)
				for j := range res.Configs {
					res.Configs[j].Name = r.compactString("Configs.Name")
					res.Configs[j].Value = r.compactNullableString("Configs.Value")
					r.skipTags("Configs tagged fields")
				}
			}
			r.skipTags("ConfigResources tagged fields")
		}
	}
	m.Topics = nil
	if n := r.nonNullArrayLen("Topics", 22); n > 0 {
		m.Topics = make([]ReadImageTopic, n)
		for i := range m.Topics {
			t := &m.Topics[i]
			t.Name = r.compactString("Topics.Name")
			t.TopicID = r.uuid("Topics.TopicId")
			t.PartitionCount = r.int32("Topics.PartitionCount")
			r.skipTags("Topics tagged fields")
		}
	}
	r.skipTags("ReadImageResponse tagged fields")
	return finish("ReadImageResponse", &r)
}

// Compile-time checks that ReadImage plugs into kmsg's interfaces.
var (
	_ kmsg.Request  = (*ReadImageRequest)(nil)
	_ kmsg.Response = (*ReadImageResponse)(nil)
)
