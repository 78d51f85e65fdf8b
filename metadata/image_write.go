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
		mv := img.features.metadataVersion
		if mv != 0 && !img.writeFeatures(yield) {
			return
		}
		if !img.writeCluster(mv, yield) || !img.writeTopics(mv, yield) {
			return
		}
		for res, m := range img.configs.resources.All() {
			for k, v := range m.All() {
				r := NewConfigRecord()
				r.ResourceType, r.ResourceName, r.Name, r.Value = res.Type, res.Name, k, &v
				if !yield(r) {
					return
				}
			}
		}
		for q := range img.quotas.entities.Values() {
			for k, v := range q.values.All() {
				r := NewClientQuotaRecord()
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
			r := NewProducerIdsRecord()
			r.BrokerId, r.BrokerEpoch, r.NextProducerId = -1, -1, img.producerIDs.next
			if !yield(r) {
				return
			}
		}
		for a := range img.acls.byID.Values() {
			r := NewAccessControlEntryRecord()
			r.Id, r.ResourceType, r.ResourceName, r.PatternType = a.ID, a.ResourceType, a.ResourceName, a.PatternType
			r.Principal, r.Host, r.Operation, r.PermissionType = a.Principal, a.Host, a.Operation, a.PermissionType
			if !yield(r) {
				return
			}
		}
		if mv >= metadataVersion3_5_IV2 {
			for c := range img.scram.creds.Values() {
				r := NewUserScramCredentialRecord()
				r.Name, r.Mechanism, r.Salt, r.StoredKey, r.ServerKey, r.Iterations = c.Name, c.Mechanism, c.Salt, c.StoredKey, c.ServerKey, c.Iterations
				if !yield(r) {
					return
				}
			}
		}
		if mv >= metadataVersion3_6_IV2 {
			for t := range img.tokens.byID.Values() {
				r := NewDelegationTokenRecord()
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
}

func (img *Image) writeFeatures(yield func(Record) bool) bool {
	mv := img.features.metadataVersion
	r := NewFeatureLevelRecord()
	r.Name, r.FeatureLevel = FeatureMetadataVersion, mv
	if !yield(r) {
		return false
	}
	for name, level := range img.features.levels.All() {
		r := NewFeatureLevelRecord()
		r.Name, r.FeatureLevel = name, level
		if !yield(r) {
			return false
		}
	}
	if mv >= MetadataVersion3_4_IV0 && mv <= MetadataVersion3_9_IV0 {
		r := NewZkMigrationStateRecord()
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

func (img *Image) writeCluster(mv int16, yield func(Record) bool) bool {
	version := registerBrokerRecordVersion(mv)
	for b := range img.cluster.brokers.Values() {
		r := NewRegisterBrokerRecord()
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
		r := NewRegisterControllerRecord()
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

func (img *Image) writeTopics(mv int16, yield func(Record) bool) bool {
	topics := make([]*Topic, 0, img.topics.byID.Len())
	for t := range img.topics.byID.Values() {
		topics = append(topics, t)
	}
	slices.SortStableFunc(topics, func(a, b *Topic) int {
		return cmp.Compare(javaUUIDHash(a.ID), javaUUIDHash(b.ID))
	})
	version := partitionRecordVersion(mv)
	for _, t := range topics {
		tr := NewTopicRecord()
		tr.Name, tr.TopicId = t.Name, t.ID
		if !yield(tr) {
			return false
		}
		for id, p := range t.partitions.All() {
			r := NewPartitionRecord()
			r.Version = version
			r.PartitionId, r.TopicId = id, t.ID
			r.Replicas, r.Isr, r.RemovingReplicas, r.AddingReplicas = emptyIfNil(p.Replicas), emptyIfNil(p.ISR), emptyIfNil(p.RemovingReplicas), emptyIfNil(p.AddingReplicas)
			r.Leader, r.LeaderRecoveryState, r.LeaderEpoch, r.PartitionEpoch = p.Leader, p.LeaderRecoveryState, p.LeaderEpoch, p.PartitionEpoch
			if version >= 1 {
				r.Directories = p.Directories
			}
			if version >= 2 {
				r.EligibleLeaderReplicas, r.LastKnownElr = p.ELR, p.LastKnownELR
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
