package metadata

import (
	"cmp"
	"iter"
	"slices"
)

// SnapshotRecords iterates over the records that represent img in a
// snapshot, in the order of Kafka's MetadataImage.write:
//
//  1. features: the metadata.version FeatureLevelRecord first, then the
//     other finalized features by name, then, for a metadata.version in
//     3.4-IV0..3.9-IV0, the ZkMigrationStateRecord (Kafka 3.x writes it
//     for those levels, Kafka 4.x no longer has it);
//  2. cluster: brokers by id, then controllers by id (controllers only
//     from 3.7-IV0);
//  3. topics, each TopicRecord followed by its PartitionRecords by
//     partition id; topics in the order of Kafka's persistent hash map,
//     ascending Java Uuid.hashCode (then id bytes);
//  4. configs by resource type, resource name, then key;
//  5. client quotas, one record per entity and key;
//  6. the ProducerIdsRecord (broker id and epoch -1), if an id was ever
//     allocated;
//  7. ACLs by id; 8. SCRAM credentials by mechanism then user (from
//     3.5-IV2); 9. delegation tokens by id (from 3.6-IV2).
//
// Where Kafka iterates a java.util.HashMap (features other than
// metadata.version, config resources and keys, quota entities, ACLs,
// SCRAM users, tokens, broker features) its order depends on hash codes
// and table sizes, and for config resources on identity hash codes that
// change from run to run; there the order above is ours.
//
// Record versions are those Kafka chooses for the image's
// metadata.version (MetadataVersion.*RecordVersion): PartitionRecord v2
// from 4.0-IV1, v1 from 3.7-IV2, else v0; RegisterBrokerRecord v4 from
// 4.3-IV0, v3 from 3.7-IV2, v2 from 3.4-IV0, else v1; every other record
// v0. Fields a version cannot carry are left out as Kafka does (replica
// directories before 3.7-IV2, ELR before 4.0-IV1, log directories and
// the ZooKeeper migration flag of brokers). Empty ELR lists are not
// written.
//
// The records share slices with img and must not be modified.
func (img *Image) SnapshotRecords() iter.Seq[Record] {
	return func(yield func(Record) bool) {
		img.walkSnapshot(nil, yield)
	}
}

// AppendSnapshotRecords calls emit with the framed encoding (as
// AppendRecord writes it) of every record of SnapshotRecords, in the same
// order, and stops at the first error, which it returns. The records are
// encoded one after the other into the same buffer, and each is built in
// a struct of its type that is reused for the next record of that type,
// so a snapshot of any size allocates only a fixed number of objects:
// value is valid only until emit returns.
func (img *Image) AppendSnapshotRecords(emit func(value []byte) error) error {
	s := new(snapshotScratch)
	var err error
	img.walkSnapshot(s, func(r Record) bool {
		s.buf, err = AppendRecord(s.buf[:0], r)
		if err == nil {
			err = emit(s.buf)
		}
		return err == nil
	})
	return err
}

// snapshotScratch is AppendSnapshotRecords' state: its encoding buffer and
// one record of each type a snapshot holds, reset for every record. A nil
// *snapshotScratch hands out new records instead (SnapshotRecords).
type snapshotScratch struct {
	buf         []byte
	feature     FeatureLevelRecord
	zkMigration ZkMigrationStateRecord
	broker      RegisterBrokerRecord
	controller  RegisterControllerRecord
	topic       TopicRecord
	partition   PartitionRecord
	dirs        [][16]byte // the partition record's directories
	config      ConfigRecord
	configValue string
	quota       ClientQuotaRecord
	producerIDs ProducerIdsRecord
	acl         AccessControlEntryRecord
	scram       UserScramCredentialRecord
	token       DelegationTokenRecord
}

func (s *snapshotScratch) featureLevelRecord() *FeatureLevelRecord {
	if s == nil {
		return NewFeatureLevelRecord()
	}
	s.feature.Default()
	return &s.feature
}

func (s *snapshotScratch) zkMigrationStateRecord() *ZkMigrationStateRecord {
	if s == nil {
		return NewZkMigrationStateRecord()
	}
	s.zkMigration.Default()
	return &s.zkMigration
}

// registerBrokerRecord keeps the endpoint and feature arrays of the
// previous broker for their capacity. Its Rack and Fenced are left zero
// rather than at their defaults (Default allocates the empty Rack):
// writeCluster sets both.
func (s *snapshotScratch) registerBrokerRecord() *RegisterBrokerRecord {
	if s == nil {
		return NewRegisterBrokerRecord()
	}
	s.broker = RegisterBrokerRecord{EndPoints: s.broker.EndPoints[:0], Features: s.broker.Features[:0]}
	return &s.broker
}

func (s *snapshotScratch) registerControllerRecord() *RegisterControllerRecord {
	if s == nil {
		return NewRegisterControllerRecord()
	}
	ep, f := s.controller.EndPoints[:0], s.controller.Features[:0]
	s.controller.Default()
	s.controller.EndPoints, s.controller.Features = ep, f
	return &s.controller
}

func (s *snapshotScratch) topicRecord() *TopicRecord {
	if s == nil {
		return NewTopicRecord()
	}
	s.topic.Default()
	return &s.topic
}

func (s *snapshotScratch) partitionRecord() *PartitionRecord {
	if s == nil {
		return NewPartitionRecord()
	}
	s.partition.Default()
	return &s.partition
}

// partitionDirs returns p's directories, in the scratch's slice when
// there is one.
func (s *snapshotScratch) partitionDirs(p *Partition) [][16]byte {
	if s == nil {
		return p.Directories()
	}
	s.dirs = p.AppendDirectories(s.dirs[:0])
	return s.dirs
}

// configRecord returns a record with value as its Value. A reused record
// points at the scratch's own string, not at a new one, and is not reset
// through Default, which allocates the empty Value: every field is set
// here.
func (s *snapshotScratch) configRecord(resourceType int8, resourceName, name, value string) *ConfigRecord {
	if s == nil {
		r := NewConfigRecord()
		r.ResourceType, r.ResourceName, r.Name, r.Value = resourceType, resourceName, name, &value
		return r
	}
	s.configValue = value
	s.config = ConfigRecord{ResourceType: resourceType, ResourceName: resourceName, Name: name, Value: &s.configValue}
	return &s.config
}

func (s *snapshotScratch) clientQuotaRecord() *ClientQuotaRecord {
	if s == nil {
		return NewClientQuotaRecord()
	}
	entity := s.quota.Entity[:0]
	s.quota.Default()
	s.quota.Entity = entity
	return &s.quota
}

func (s *snapshotScratch) producerIdsRecord() *ProducerIdsRecord {
	if s == nil {
		return NewProducerIdsRecord()
	}
	s.producerIDs.Default()
	return &s.producerIDs
}

func (s *snapshotScratch) accessControlEntryRecord() *AccessControlEntryRecord {
	if s == nil {
		return NewAccessControlEntryRecord()
	}
	s.acl.Default()
	return &s.acl
}

func (s *snapshotScratch) userScramCredentialRecord() *UserScramCredentialRecord {
	if s == nil {
		return NewUserScramCredentialRecord()
	}
	s.scram.Default()
	return &s.scram
}

func (s *snapshotScratch) delegationTokenRecord() *DelegationTokenRecord {
	if s == nil {
		return NewDelegationTokenRecord()
	}
	s.token.Default()
	return &s.token
}

// walkSnapshot yields the records of SnapshotRecords, taken from s (see
// snapshotScratch).
func (img *Image) walkSnapshot(s *snapshotScratch, yield func(Record) bool) {
	mv := img.features.metadataVersion
	if mv != 0 && !img.writeFeatures(s, yield) {
		return
	}
	if !img.writeCluster(s, mv, yield) || !img.writeTopics(s, mv, yield) {
		return
	}
	for res, m := range img.configs.resources.All() {
		for k, v := range m.All() {
			if !yield(s.configRecord(res.Type, res.Name, k, v)) {
				return
			}
		}
	}
	for q := range img.quotas.entities.Values() {
		for k, v := range q.values.All() {
			r := s.clientQuotaRecord()
			for _, e := range q.Entity {
				r.Entity = append(r.Entity, ClientQuotaRecordEntityData{EntityType: e.Type, EntityName: e.Name})
			}
			r.Key, r.Value = k, v
			if !yield(r) {
				return
			}
		}
	}
	if img.producerIDs.next >= 0 {
		r := s.producerIdsRecord()
		r.BrokerId, r.BrokerEpoch, r.NextProducerId = -1, -1, img.producerIDs.next
		if !yield(r) {
			return
		}
	}
	for a := range img.acls.byID.Values() {
		r := s.accessControlEntryRecord()
		r.Id, r.ResourceType, r.ResourceName, r.PatternType = a.ID, a.ResourceType, a.ResourceName, a.PatternType
		r.Principal, r.Host, r.Operation, r.PermissionType = a.Principal, a.Host, a.Operation, a.PermissionType
		if !yield(r) {
			return
		}
	}
	if mv >= metadataVersion3_5_IV2 {
		for c := range img.scram.creds.Values() {
			r := s.userScramCredentialRecord()
			r.Name, r.Mechanism, r.Salt, r.StoredKey, r.ServerKey, r.Iterations = c.Name, c.Mechanism, c.Salt, c.StoredKey, c.ServerKey, c.Iterations
			if !yield(r) {
				return
			}
		}
	}
	if mv >= metadataVersion3_6_IV2 {
		for t := range img.tokens.byID.Values() {
			r := s.delegationTokenRecord()
			r.TokenId, r.Owner, r.Requester, r.Renewers = t.TokenID, t.Owner, t.Requester, t.Renewers
			if r.Renewers == nil {
				r.Renewers = []string{}
			}
			r.IssueTimestamp, r.MaxTimestamp, r.ExpirationTimestamp = t.IssueTimestamp, t.MaxTimestamp, t.ExpirationTimestamp
			if !yield(r) {
				return
			}
		}
	}
}

func (img *Image) writeFeatures(s *snapshotScratch, yield func(Record) bool) bool {
	mv := img.features.metadataVersion
	r := s.featureLevelRecord()
	r.Name, r.FeatureLevel = FeatureMetadataVersion, mv
	if !yield(r) {
		return false
	}
	for name, level := range img.features.levels.All() {
		r := s.featureLevelRecord()
		r.Name, r.FeatureLevel = name, level
		if !yield(r) {
			return false
		}
	}
	if mv >= MetadataVersion3_4_IV0 && mv <= MetadataVersion3_9_IV0 {
		r := s.zkMigrationStateRecord()
		r.ZkMigrationState = img.features.zkMigration
		if !yield(r) {
			return false
		}
	}
	return true
}

// registerBrokerRecordVersion is Kafka's
// MetadataVersion.registerBrokerRecordVersion.
func registerBrokerRecordVersion(mv int16) int16 {
	switch {
	case mv >= MetadataVersion4_3_IV0:
		return 4
	case mv >= MetadataVersion3_7_IV2:
		return 3
	case mv >= MetadataVersion3_4_IV0:
		return 2
	}
	return 1
}

// partitionRecordVersion is Kafka's MetadataVersion.partitionRecordVersion.
func partitionRecordVersion(mv int16) int16 {
	switch {
	case mv >= MetadataVersion4_0_IV1:
		return 2
	case mv >= MetadataVersion3_7_IV2:
		return 1
	}
	return 0
}

func (img *Image) writeCluster(s *snapshotScratch, mv int16, yield func(Record) bool) bool {
	version := registerBrokerRecordVersion(mv)
	for b := range img.cluster.brokers.Values() {
		r := s.registerBrokerRecord()
		r.Version = version
		r.BrokerId, r.IncarnationId, r.BrokerEpoch = b.ID, b.IncarnationID, b.Epoch
		for _, e := range b.Endpoints {
			r.EndPoints = append(r.EndPoints, RegisterBrokerRecordBrokerEndpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
		}
		for _, f := range b.Features {
			r.Features = append(r.Features, RegisterBrokerRecordBrokerFeature{Name: f.Name, MinSupportedVersion: f.Min, MaxSupportedVersion: f.Max})
		}
		r.Rack, r.Fenced, r.InControlledShutdown = b.Rack, b.Fenced, b.InControlledShutdown
		if version >= 2 {
			r.IsMigratingZkBroker = b.IsMigratingZkBroker
		}
		if version >= 3 {
			r.LogDirs = b.LogDirs
		}
		if version >= 4 {
			r.CordonedLogDirs = b.CordonedLogDirs
		}
		if !yield(r) {
			return false
		}
	}
	if mv < MetadataVersion3_7_IV0 {
		return true
	}
	for c := range img.cluster.controllers.Values() {
		r := s.registerControllerRecord()
		r.ControllerId, r.IncarnationId, r.ZkMigrationReady = c.ID, c.IncarnationID, c.ZkMigrationReady
		for _, e := range c.Endpoints {
			r.EndPoints = append(r.EndPoints, RegisterControllerRecordControllerEndpoint{Name: e.Name, Host: e.Host, Port: e.Port, SecurityProtocol: e.SecurityProtocol})
		}
		for _, f := range c.Features {
			r.Features = append(r.Features, RegisterControllerRecordControllerFeature{Name: f.Name, MinSupportedVersion: f.Min, MaxSupportedVersion: f.Max})
		}
		if !yield(r) {
			return false
		}
	}
	return true
}

// javaUUIDHash is Java's Uuid.hashCode.
func javaUUIDHash(id [16]byte) int32 {
	var msb, lsb uint64
	for i := range 8 {
		msb = msb<<8 | uint64(id[i])
		lsb = lsb<<8 | uint64(id[8+i])
	}
	h := msb ^ lsb
	return int32(uint32(h>>32) ^ uint32(h))
}

func (img *Image) writeTopics(s *snapshotScratch, mv int16, yield func(Record) bool) bool {
	topics := make([]*Topic, 0, img.topics.byID.Len())
	for t := range img.topics.byID.Values() {
		topics = append(topics, t)
	}
	slices.SortStableFunc(topics, func(a, b *Topic) int {
		return cmp.Compare(javaUUIDHash(a.ID), javaUUIDHash(b.ID))
	})
	version := partitionRecordVersion(mv)
	for _, t := range topics {
		tr := s.topicRecord()
		tr.Name, tr.TopicId = t.Name, t.ID
		if !yield(tr) {
			return false
		}
		for id, p := range t.partitions.All() {
			r := s.partitionRecord()
			r.Version = version
			r.PartitionId, r.TopicId = id, t.ID
			r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = emptyIfNil(p.Replicas()), emptyIfNil(p.ISR()), emptyIfNil(p.RemovingReplicas()), emptyIfNil(p.AddingReplicas())
			r.Leader, r.LeaderRecoveryState, r.LeaderEpoch, r.PartitionEpoch = p.Leader, p.LeaderRecoveryState, p.LeaderEpoch, p.PartitionEpoch
			if version >= 1 {
				r.Directories = s.partitionDirs(p)
			}
			if version >= 2 {
				r.EligibleLeaderReplicas, r.LastKnownElr = p.ELR(), p.LastKnownELR()
			}
			if !yield(r) {
				return false
			}
		}
	}
	return true
}

func emptyIfNil(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}
