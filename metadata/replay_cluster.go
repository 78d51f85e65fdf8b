package metadata

import (
	"slices"
)

// replayFeatureLevel applies a FeatureLevelRecord (Kafka's
// FeaturesDelta.replay). Rules:
//   - the name is not empty and is not kraft.version, which Kafka keeps
//     in control records and never finalizes with this record;
//   - metadata.version lies in [MinMetadataVersion, MaxMetadataVersion]
//     (it cannot be removed with level 0); a lower level than the
//     current one is accepted, as Kafka 4.x allows downgrades (the next
//     snapshot then uses the lower level's record versions and may drop
//     what they cannot carry, see Image.SnapshotRecords);
//   - other levels are not negative; level 0 removes the feature;
//   - every registered broker and controller supports the new level, as
//     Kafka's controller checks before finalizing a level (a node that
//     does not list the feature supports only level 0).
func (img *Image) replayFeatureLevel(r *FeatureLevelRecord) error {
	switch {
	case r.Name == "":
		return reject(ErrInvalidRecord, "empty feature name")
	case r.Name == FeatureKRaftVersion:
		return reject(ErrInvalidRecord, "kraft.version is finalized by KRaftVersionRecord control records, not by FeatureLevelRecord")
	case r.Name == FeatureMetadataVersion && (r.FeatureLevel < MinMetadataVersion || r.FeatureLevel > MaxMetadataVersion):
		return reject(ErrUnsupportedMetadataVersion, "metadata.version %d is outside the supported range %d-%d", r.FeatureLevel, MinMetadataVersion, MaxMetadataVersion)
	case r.FeatureLevel < 0:
		return reject(ErrInvalidRecord, "feature %s level %d is negative", r.Name, r.FeatureLevel)
	}
	for b := range img.cluster.brokers.Values() {
		if !supports(b.Features, r.Name, r.FeatureLevel) {
			return reject(ErrUnsupportedFeature, "broker %d does not support %s level %d", b.ID, r.Name, r.FeatureLevel)
		}
	}
	for c := range img.cluster.controllers.Values() {
		if !supports(c.Features, r.Name, r.FeatureLevel) {
			return reject(ErrUnsupportedFeature, "controller %d does not support %s level %d", c.ID, r.Name, r.FeatureLevel)
		}
	}
	if r.Name == FeatureMetadataVersion {
		img.features.metadataVersion = r.FeatureLevel
		return nil
	}
	if r.FeatureLevel == 0 {
		img.features.levels = img.features.levels.without(r.Name, img.edit)
	} else {
		img.features.levels = img.features.levels.with(r.Name, r.FeatureLevel, img.edit)
	}
	return nil
}

// supports reports whether a registration's feature ranges include level
// of feature name; an unlisted feature supports only level 0.
func supports(features []SupportedFeature, name string, level int16) bool {
	for _, f := range features {
		if f.Name == name {
			return level >= f.Min && level <= f.Max
		}
	}
	return level == 0
}

// replayZkMigration records the ZooKeeper migration state; the state is
// one of 0 NONE, 1 PRE_MIGRATION, 2 MIGRATION, 3 POST_MIGRATION.
func (img *Image) replayZkMigration(r *ZkMigrationStateRecord) error {
	if r.ZkMigrationState < 0 || r.ZkMigrationState > 3 {
		return reject(ErrInvalidRecord, "unknown ZooKeeper migration state %d", r.ZkMigrationState)
	}
	img.features.zkMigration = r.ZkMigrationState
	return nil
}

// replayRegisterBroker applies a RegisterBrokerRecord (Kafka's
// ClusterDelta.replay), which replaces any earlier registration of the
// broker. Rules:
//   - the broker id and epoch are not negative and the incarnation id is
//     not zero;
//   - a re-registration has a higher epoch than the registration it
//     replaces (KIP-903: the epoch is the record's offset);
//   - endpoint and feature names are unique and feature ranges are
//     ordered;
//   - the broker supports every finalized feature level, as Kafka's
//     controller requires (UNSUPPORTED_VERSION otherwise).
func (img *Image) replayRegisterBroker(r *RegisterBrokerRecord) error {
	if r.BrokerId < 0 {
		return reject(ErrInvalidRecord, "broker id %d is negative", r.BrokerId)
	}
	if r.BrokerEpoch < 0 {
		return reject(ErrInvalidRecord, "broker %d epoch %d is negative", r.BrokerId, r.BrokerEpoch)
	}
	if r.IncarnationId == ([16]byte{}) {
		return reject(ErrInvalidRecord, "broker %d has a zero incarnation id", r.BrokerId)
	}
	if old, ok := img.cluster.brokers.Get(r.BrokerId); ok && r.BrokerEpoch <= old.Epoch {
		return reject(ErrStaleBrokerEpoch, "broker %d re-registers with epoch %d, not above its current epoch %d", r.BrokerId, r.BrokerEpoch, old.Epoch)
	}
	b := &Broker{
		ID:                   r.BrokerId,
		IncarnationID:        r.IncarnationId,
		Epoch:                r.BrokerEpoch,
		Rack:                 cloneString(r.Rack),
		Fenced:               r.Fenced,
		InControlledShutdown: r.InControlledShutdown,
		IsMigratingZkBroker:  r.IsMigratingZkBroker,
		LogDirs:              cloneNonEmpty(r.LogDirs),
		CordonedLogDirs:      slices.Clone(r.CordonedLogDirs),
	}
	for _, e := range r.EndPoints {
		b.Endpoints = append(b.Endpoints, Endpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
	}
	for _, f := range r.Features {
		b.Features = append(b.Features, SupportedFeature{Name: f.Name, Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion})
	}
	if err := checkRegistration("broker", r.BrokerId, b.Endpoints, b.Features); err != nil {
		return err
	}
	if err := img.checkSupportsFinalized("broker", r.BrokerId, b.Features); err != nil {
		return err
	}
	img.cluster.brokers = img.cluster.brokers.with(b.ID, b, img.edit)
	return nil
}

// checkRegistration checks the endpoints and features of a broker or
// controller registration.
func checkRegistration(what string, id int32, endpoints []Endpoint, features []SupportedFeature) error {
	names := make([]string, len(endpoints))
	for i, e := range endpoints {
		if e.Name == "" {
			return reject(ErrInvalidRecord, "%s %d has an endpoint without a name", what, id)
		}
		names[i] = e.Name
	}
	if n, ok := firstDuplicate(names); ok {
		return reject(ErrInvalidRecord, "%s %d lists endpoint %s twice", what, id, n)
	}
	names = names[:0]
	for _, f := range features {
		if f.Name == "" {
			return reject(ErrInvalidRecord, "%s %d has a feature without a name", what, id)
		}
		if f.Min > f.Max {
			return reject(ErrInvalidRecord, "%s %d supports %s from %d to %d", what, id, f.Name, f.Min, f.Max)
		}
		names = append(names, f.Name)
	}
	if n, ok := firstDuplicate(names); ok {
		return reject(ErrInvalidRecord, "%s %d lists feature %s twice", what, id, n)
	}
	return nil
}

// checkSupportsFinalized checks that features cover every finalized
// level.
func (img *Image) checkSupportsFinalized(what string, id int32, features []SupportedFeature) error {
	if mv := img.features.metadataVersion; !supports(features, FeatureMetadataVersion, mv) {
		return reject(ErrUnsupportedFeature, "%s %d does not support the finalized metadata.version %d", what, id, mv)
	}
	for name, level := range img.features.levels.All() {
		if !supports(features, name, level) {
			return reject(ErrUnsupportedFeature, "%s %d does not support the finalized %s level %d", what, id, name, level)
		}
	}
	return nil
}

// brokerAt returns the registration of broker id if its epoch is epoch
// (Kafka's ClusterDelta.getBrokerOrThrow).
func (img *Image) brokerAt(id int32, epoch int64) (*Broker, error) {
	b, ok := img.cluster.brokers.Get(id)
	if !ok {
		return nil, reject(ErrNotFound, "broker %d is not registered", id)
	}
	if b.Epoch != epoch {
		return nil, reject(ErrStaleBrokerEpoch, "broker %d has epoch %d, not %d", id, b.Epoch, epoch)
	}
	return b, nil
}

// replayUnregisterBroker removes a broker registration; the broker must
// be registered with the record's epoch. Its partitions keep it as a
// replica, as in Kafka.
func (img *Image) replayUnregisterBroker(r *UnregisterBrokerRecord) error {
	if _, err := img.brokerAt(r.BrokerId, r.BrokerEpoch); err != nil {
		return err
	}
	img.cluster.brokers = img.cluster.brokers.without(r.BrokerId, img.edit)
	return nil
}

// replayFenceBroker applies a FenceBrokerRecord or UnfenceBrokerRecord;
// the broker must be registered with the record's epoch.
func (img *Image) replayFenceBroker(id int32, epoch int64, fenced bool) error {
	b, err := img.brokerAt(id, epoch)
	if err != nil {
		return err
	}
	nb := *b
	nb.Fenced = fenced
	img.cluster.brokers = img.cluster.brokers.with(id, &nb, img.edit)
	return nil
}

// replayBrokerRegistrationChange applies a BrokerRegistrationChangeRecord.
// Rules: the broker is registered with the record's epoch; Fenced is -1
// (unfence), 0 (no change) or 1 (fence); InControlledShutdown is 0 (no
// change) or 1. Empty LogDirs and null CordonedLogDirs mean no change.
func (img *Image) replayBrokerRegistrationChange(r *BrokerRegistrationChangeRecord) error {
	b, err := img.brokerAt(r.BrokerId, r.BrokerEpoch)
	if err != nil {
		return err
	}
	nb := *b
	switch r.Fenced {
	case -1:
		nb.Fenced = false
	case 0:
	case 1:
		nb.Fenced = true
	default:
		return reject(ErrInvalidRecord, "broker %d: unknown fencing change %d", r.BrokerId, r.Fenced)
	}
	switch r.InControlledShutdown {
	case 0:
	case 1:
		nb.InControlledShutdown = true
	default:
		return reject(ErrInvalidRecord, "broker %d: unknown controlled shutdown change %d", r.BrokerId, r.InControlledShutdown)
	}
	if len(r.LogDirs) > 0 {
		nb.LogDirs = slices.Clone(r.LogDirs)
	}
	if r.CordonedLogDirs != nil {
		nb.CordonedLogDirs = slices.Clone(r.CordonedLogDirs)
	}
	img.cluster.brokers = img.cluster.brokers.with(r.BrokerId, &nb, img.edit)
	return nil
}

// replayRegisterController applies a RegisterControllerRecord, which
// replaces any earlier registration of the controller. Rules: the
// metadata.version is at least 3.7-IV0 (Kafka has no controller
// registration before); the id is not negative; the incarnation id is
// not zero; endpoint and feature names are unique; the controller
// supports every finalized feature level.
func (img *Image) replayRegisterController(r *RegisterControllerRecord) error {
	if mv := img.features.metadataVersion; mv < MetadataVersion3_7_IV0 {
		return reject(ErrUnsupportedFeature, "controller registration needs metadata.version 3.7-IV0 (15), have %d", mv)
	}
	if r.ControllerId < 0 {
		return reject(ErrInvalidRecord, "controller id %d is negative", r.ControllerId)
	}
	if r.IncarnationId == ([16]byte{}) {
		return reject(ErrInvalidRecord, "controller %d has a zero incarnation id", r.ControllerId)
	}
	c := &Controller{ID: r.ControllerId, IncarnationID: r.IncarnationId, ZkMigrationReady: r.ZkMigrationReady}
	for _, e := range r.EndPoints {
		c.Endpoints = append(c.Endpoints, Endpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
	}
	for _, f := range r.Features {
		c.Features = append(c.Features, SupportedFeature{Name: f.Name, Min: f.MinSupportedVersion, Max: f.MaxSupportedVersion})
	}
	if err := checkRegistration("controller", r.ControllerId, c.Endpoints, c.Features); err != nil {
		return err
	}
	if err := img.checkSupportsFinalized("controller", r.ControllerId, c.Features); err != nil {
		return err
	}
	img.cluster.controllers = img.cluster.controllers.with(c.ID, c, img.edit)
	return nil
}

func cloneString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}

// cloneNonEmpty copies s, returning nil for an empty slice.
func cloneNonEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
