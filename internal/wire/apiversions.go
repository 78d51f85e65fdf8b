package wire

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Feature names as Kafka spells them (server-common Feature.java).
const (
	// FeatureMetadataVersion names the metadata.version feature.
	FeatureMetadataVersion = "metadata.version"
	// FeatureKRaftVersion names the kraft.version feature.
	FeatureKRaftVersion = "kraft.version"
)

// KRaft versions a Krabka controller supports: 0 (static voters from
// controller.quorum.voters) and 1 (KIP-853 dynamic voters).
const (
	MinKRaftVersion int16 = 0
	MaxKRaftVersion int16 = 1
)

// SupportedFeature is a feature and the range of levels this node can run.
type SupportedFeature struct {
	// Name is the feature name, for example "group.version".
	Name string
	// Min and Max bound the supported levels, inclusive.
	Min, Max int16
}

// FinalizedFeature is a feature level finalized in the cluster's metadata.
type FinalizedFeature struct {
	// Name is the feature name.
	Name string
	// Level is the finalized level; level 0 means "not finalized" and is
	// not listed in ApiVersions responses.
	Level int16
}

// FeatureState is what the runtime supplies for an ApiVersions answer. The
// runtime builds it from the current metadata image and the raft client's
// kraft.version; wire only formats it.
type FeatureState struct {
	// MetadataVersion is the range of metadata.version levels this node
	// supports (Kafka 4.3.1: 7, 3.3-IV3, through 30, 4.3-IV0).
	MetadataVersion SupportedFeature
	// Other lists further supported features, if any, besides
	// metadata.version and kraft.version (which wire adds itself, with the
	// range MinKRaftVersion..MaxKRaftVersion). The Name of MetadataVersion
	// is ignored; it is always "metadata.version".
	Other []SupportedFeature
	// Finalized lists the finalized feature levels, kraft.version among
	// them (taken from the raft client, as ControllerServer does).
	Finalized []FinalizedFeature
	// FinalizedEpoch is the epoch of the finalized features (the offset of
	// the image they come from), or -1 when unknown.
	FinalizedEpoch int64
	// UnstableAPIVersions is the listener's unstable.api.versions.enable:
	// whether the API rows advertise their unstable versions
	// ([APIVersion.MaxEnabled]).
	UnstableAPIVersions bool
	// Claimed are the rows of the APIs an embedder serves on the
	// listener ([ClaimedAPI]), listed with the version table's.
	Claimed []APIVersion
}

// UnsupportedAPIVersionsResponse returns Kafka's answer to an ApiVersions
// request at a version it does not support (KIP-511): a version-0 response
// with UNSUPPORTED_VERSION whose ApiKeys holds only the ApiVersions row, so
// the client can retry at a version both sides speak
// (ApiVersionsRequest.getErrorResponse, RequestContext.apiVersion);
// unstable says whether an unstable ApiVersions version is served.
func UnsupportedAPIVersionsResponse(unstable bool) *kmsg.ApiVersionsResponse {
	a, _ := LookupAPI(KeyAPIVersions)
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.Min, a.MaxEnabled(unstable)
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}

// AnswerAPIVersions builds the response to a decoded ApiVersions request
// at a supported version, as a Kafka controller does
// (ControllerApis.handleApiVersionsRequest):
//
//   - v3+ with a ClientSoftwareName or ClientSoftwareVersion that does not
//     match [ValidClientSoftware] ⇒ INVALID_REQUEST with no API list (the
//     error response of ApiVersionsRequest.getErrorResponse);
//   - otherwise NONE, every row of the version table (capped at its
//     stable versions unless st.UnstableAPIVersions) and of st.Claimed,
//     sorted by key, the supported
//     features (kraft.version MinKRaftVersion..MaxKRaftVersion,
//     metadata.version and st.Other), the finalized features with a level
//     above 0 (min = max = level) and their epoch. For request versions
//     below 4, supported features whose minimum is 0 are left out, because
//     older clients fail to parse them (KAFKA-17492; ApiVersions v4,
//     KAFKA-17011). Features exist on the wire from v3 on only.
//
// Features are sorted by name, so the answer is deterministic.
func AnswerAPIVersions(req *kmsg.ApiVersionsRequest, st FeatureState) *kmsg.ApiVersionsResponse {
	v := req.GetVersion()
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(v)
	if v >= 3 && (!ValidClientSoftware(req.ClientSoftwareName) || !ValidClientSoftware(req.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp
	}
	apis := SupportedAPIs()
	if len(st.Claimed) > 0 {
		apis = append(apis, st.Claimed...)
		slices.SortStableFunc(apis, func(a, b APIVersion) int { return cmp.Compare(a.Key, b.Key) })
	}
	for _, a := range apis {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.Key, a.Min, a.MaxEnabled(st.UnstableAPIVersions)
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	supported := make([]SupportedFeature, 0, 2+len(st.Other))
	supported = append(supported,
		SupportedFeature{Name: FeatureKRaftVersion, Min: MinKRaftVersion, Max: MaxKRaftVersion},
		SupportedFeature{Name: FeatureMetadataVersion, Min: st.MetadataVersion.Min, Max: st.MetadataVersion.Max},
	)
	supported = append(supported, st.Other...)
	slices.SortStableFunc(supported, func(a, b SupportedFeature) int { return cmp.Compare(a.Name, b.Name) })
	for _, f := range supported {
		if v < 4 && f.Min == 0 {
			continue
		}
		sf := kmsg.NewApiVersionsResponseSupportedFeature()
		sf.Name, sf.MinVersion, sf.MaxVersion = f.Name, f.Min, f.Max
		resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
	}
	finalized := slices.Clone(st.Finalized)
	slices.SortStableFunc(finalized, func(a, b FinalizedFeature) int { return cmp.Compare(a.Name, b.Name) })
	for _, f := range finalized {
		if f.Level == 0 {
			continue
		}
		ff := kmsg.NewApiVersionsResponseFinalizedFeature()
		ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.Name, f.Level, f.Level
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
	}
	resp.FinalizedFeaturesEpoch = st.FinalizedEpoch
	return resp
}

// ValidClientSoftware reports whether s is a valid ClientSoftwareName or
// ClientSoftwareVersion (KIP-511): it must match
// [a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])? in full, that is, be non-empty
// ASCII letters, digits, '-' and '.', starting and ending with a letter or
// digit. Hand-written instead of a regexp to keep the package free of
// global state.
func ValidClientSoftware(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if alnum {
			continue
		}
		if (c == '-' || c == '.') && i != 0 && i != len(s)-1 {
			continue
		}
		return false
	}
	return true
}
