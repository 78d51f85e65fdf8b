package wire

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// API keys of the requests a Krabka controller serves. The Kafka keys are
// Kafka's (apache/kafka ApiKeys.java); KeySubmitChange, KeyMetadataFetch and
// KeyReadImage are Krabka's private RPCs, documented in docs/wire.md.
const (
	KeyFetch            int16 = 1
	KeySASLHandshake    int16 = 17
	KeyAPIVersions      int16 = 18
	KeySASLAuthenticate int16 = 36
	KeyVote             int16 = 52
	KeyBeginQuorumEpoch int16 = 53
	KeyEndQuorumEpoch   int16 = 54
	KeyDescribeQuorum   int16 = 55
	KeyUpdateFeatures   int16 = 57
	KeyFetchSnapshot    int16 = 59
	KeyDescribeCluster  int16 = 60
	// KeyControllerRegistration is the RPC a controller registers itself
	// with (KIP-919).
	KeyControllerRegistration int16 = 70
	KeyAddRaftVoter           int16 = 80
	KeyRemoveRaftVoter        int16 = 81
	KeyUpdateRaftVoter        int16 = 82

	// KeySubmitChange is the private RPC a follower or tool uses to hand
	// metadata records to the leader and wait for their commit.
	KeySubmitChange int16 = 1003
	// KeyMetadataFetch is the private RPC an observer uses to read
	// committed records.
	KeyMetadataFetch int16 = 1004
	// KeyReadImage is the private RPC that reads part of a node's metadata
	// image, optionally behind a linearizable read barrier.
	KeyReadImage int16 = 1005
)

// APIVersion is one row of the version table: the range of versions of one
// API that a Krabka controller accepts and advertises in ApiVersions, and
// the first flexible version (KIP-482), which decides the header versions.
type APIVersion struct {
	// Key is the API key.
	Key int16
	// Name is Kafka's name of the API (ApiKeys.java), or ours for the
	// private RPCs.
	Name string
	// Min and Max bound the versions we serve, inclusive.
	Min, Max int16
	// FlexibleFrom is the first flexible version: from it on the request
	// header is v2 and the response header v1 (except ApiVersions, whose
	// response header is always v0).
	FlexibleFrom int16
	// LatestUnstable marks Max as unstable, as Kafka's schema flag
	// latestVersionUnstable does: that version is advertised and served
	// only with unstable.api.versions.enable (ApiKeys.latestVersion).
	LatestUnstable bool
}

// Supports reports whether version v is within [a.Min, a.Max]: whether
// this build can decode it.
func (a APIVersion) Supports(v int16) bool { return v >= a.Min && v <= a.Max }

// MaxEnabled is the highest version served: Max, or the version below
// it when Max is unstable and unstable API versions are not enabled.
func (a APIVersion) MaxEnabled(unstable bool) int16 {
	if a.LatestUnstable && !unstable {
		return a.Max - 1
	}
	return a.Max
}

// Enabled reports whether version v is served (Kafka's
// ApiKeys.isVersionEnabled): within [a.Min, a.MaxEnabled(unstable)].
func (a APIVersion) Enabled(v int16, unstable bool) bool {
	return v >= a.Min && v <= a.MaxEnabled(unstable)
}

// Flexible reports whether version v of the API uses the flexible encoding
// (compact strings and arrays, tagged fields).
func (a APIVersion) Flexible(v int16) bool { return v >= a.FlexibleFrom }

// versionTable is THE version table: the single source for the ApiVersions
// response ([SupportedAPIs]) and for the decode checks ([LookupAPI] in
// [DecodeRequest]). It is a function returning an array value so that no
// caller can change it.
//
// The ranges are Kafka 4.3.1's (clients/src/main/resources/common/message,
// their JSON schemas), with one deliberate departure: Fetch starts at 13, not
// 4. KafkaRaftClient accepts only a Fetch naming the metadata partition by
// topic id (RaftUtil.hasValidTopicPartition), and topic ids exist from Fetch
// v13 on; Kafka answers v4–v12 with INVALID_REQUEST, so advertising them
// would only invite requests we must refuse. A peer that negotiates from our
// ApiVersions answer always picks 13 or later.
//
// SaslHandshake and SaslAuthenticate are listed because Kafka's
// controller lists them (their schemas name the controller listener): a
// SASL listener serves them before authentication and, on an
// authenticated connection, for re-authentication (KIP-368); on any
// other listener, and outside a re-authentication, they are answered
// with ILLEGAL_SASL_STATE, as ControllerApis answers them.
//
// A test (versions_test.go) checks every row against Kafka's JSON schemas:
// each range lies within Kafka's validVersions, each FlexibleFrom equals
// Kafka's flexibleVersions and each LatestUnstable Kafka's
// latestVersionUnstable. In Kafka 4.3.1 none of these APIs has an
// unstable version, so unstable.api.versions.enable changes nothing in
// what a Krabka controller advertises or serves; the flag is still
// carried to every check ([APIVersion.Enabled]), so a row that gains one
// is gated by it.
func versionTable() [18]APIVersion {
	return [18]APIVersion{
		{Key: KeyFetch, Name: "Fetch", Min: 13, Max: 18, FlexibleFrom: 12},
		{Key: KeySASLHandshake, Name: "SaslHandshake", Min: 0, Max: 1, FlexibleFrom: neverFlexible},
		{Key: KeyAPIVersions, Name: "ApiVersions", Min: 0, Max: 4, FlexibleFrom: 3},
		{Key: KeySASLAuthenticate, Name: "SaslAuthenticate", Min: 0, Max: 2, FlexibleFrom: 2},
		{Key: KeyVote, Name: "Vote", Min: 0, Max: 2, FlexibleFrom: 0},
		{Key: KeyBeginQuorumEpoch, Name: "BeginQuorumEpoch", Min: 0, Max: 1, FlexibleFrom: 1},
		{Key: KeyEndQuorumEpoch, Name: "EndQuorumEpoch", Min: 0, Max: 1, FlexibleFrom: 1},
		{Key: KeyDescribeQuorum, Name: "DescribeQuorum", Min: 0, Max: 2, FlexibleFrom: 0},
		{Key: KeyUpdateFeatures, Name: "UpdateFeatures", Min: 0, Max: 2, FlexibleFrom: 0},
		{Key: KeyFetchSnapshot, Name: "FetchSnapshot", Min: 0, Max: 1, FlexibleFrom: 0},
		{Key: KeyDescribeCluster, Name: "DescribeCluster", Min: 0, Max: 2, FlexibleFrom: 0},
		{Key: KeyControllerRegistration, Name: "ControllerRegistration", Min: 0, Max: 0, FlexibleFrom: 0},
		{Key: KeyAddRaftVoter, Name: "AddRaftVoter", Min: 0, Max: 1, FlexibleFrom: 0},
		{Key: KeyRemoveRaftVoter, Name: "RemoveRaftVoter", Min: 0, Max: 0, FlexibleFrom: 0},
		{Key: KeyUpdateRaftVoter, Name: "UpdateRaftVoter", Min: 0, Max: 0, FlexibleFrom: 0},
		{Key: KeySubmitChange, Name: "SubmitChange", Min: 0, Max: submitChangeMax, FlexibleFrom: 0},
		{Key: KeyMetadataFetch, Name: "MetadataFetch", Min: 0, Max: 0, FlexibleFrom: 0},
		{Key: KeyReadImage, Name: "ReadImage", Min: 0, Max: 0, FlexibleFrom: 0},
	}
}

// neverFlexible is the FlexibleFrom of an API no version of which is
// flexible (Kafka's flexibleVersions "none").
const neverFlexible int16 = 0x7fff

// SupportedAPIs returns the version table sorted by API key. The slice is
// freshly allocated; the caller owns it.
func SupportedAPIs() []APIVersion {
	t := versionTable()
	return t[:]
}

// LookupAPI returns the table row for key, or false when a Krabka
// controller does not serve that API.
func LookupAPI(key int16) (APIVersion, bool) {
	t := versionTable()
	for _, a := range t {
		if a.Key == key {
			return a, true
		}
	}
	return APIVersion{}, false
}

// ClaimedAPI returns the row of an API that an embedder serves on the
// controller listener in place of the node (raft.Config.AdminRouter):
// versions min through max of a Kafka API that kmsg knows, with Kafka's
// name and first flexible version. It fails for a key of the version
// table (an API the node serves itself), a key kmsg does not know, and a
// range that is empty, negative or beyond the newest version kmsg
// decodes.
func ClaimedAPI(key, minVersion, maxVersion int16) (APIVersion, error) {
	if a, ok := LookupAPI(key); ok {
		return APIVersion{}, fmt.Errorf("wire: api key %d (%s) is served by the controller itself", key, a.Name)
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return APIVersion{}, fmt.Errorf("wire: api key %d is not a Kafka API", key)
	}
	name := kmsg.NameForKey(key)
	switch {
	case minVersion < 0 || minVersion > maxVersion:
		return APIVersion{}, fmt.Errorf("wire: %s versions %d-%d: not a range of versions", name, minVersion, maxVersion)
	case maxVersion > req.MaxVersion():
		return APIVersion{}, fmt.Errorf("wire: %s v%d is newer than the newest version decoded (%d)", name, maxVersion, req.MaxVersion())
	}
	a := APIVersion{Key: key, Name: name, Min: minVersion, Max: maxVersion, FlexibleFrom: neverFlexible}
	for v := int16(0); v <= req.MaxVersion(); v++ {
		req.SetVersion(v)
		if req.IsFlexible() {
			a.FlexibleFrom = v
			break
		}
	}
	return a, nil
}
