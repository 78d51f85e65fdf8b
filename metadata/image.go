package metadata

import (
	"cmp"
	"encoding/binary"
	"iter"
	"strings"
)

// Feature names with a meaning to the image.
const (
	// FeatureMetadataVersion is the metadata.version feature, which
	// decides the record versions and the metadata the cluster uses.
	FeatureMetadataVersion = "metadata.version"
	// FeatureKRaftVersion is the kraft.version feature. Kafka keeps it in
	// control records (KRaftVersionRecord), never in a
	// FeatureLevelRecord; the image does not hold it.
	FeatureKRaftVersion = "kraft.version"
	// FeatureEligibleLeaderReplicas is the eligible.leader.replicas.version
	// feature (KIP-966).
	FeatureEligibleLeaderReplicas = "eligible.leader.replicas.version"
)

// Levels of metadata.version (Kafka's MetadataVersion enum) that change
// what the image accepts or how it is written.
const (
	// MinMetadataVersion is 3.3-IV3, the lowest metadata.version Kafka
	// 4.x accepts (MetadataVersion.MINIMUM_VERSION).
	MinMetadataVersion int16 = 7
	// MetadataVersion3_4_IV0 adds ZooKeeper migration state and
	// RegisterBrokerRecord v2.
	MetadataVersion3_4_IV0 int16 = 8
	// MetadataVersion3_7_IV0 adds controller registration.
	MetadataVersion3_7_IV0 int16 = 15
	// MetadataVersion3_7_IV2 adds directory assignment (KIP-858):
	// PartitionRecord v1, RegisterBrokerRecord v3.
	MetadataVersion3_7_IV2 int16 = 17
	// MetadataVersion3_9_IV0 is the last 3.x level; 4.0 removed ZooKeeper
	// migration.
	MetadataVersion3_9_IV0 int16 = 21
	// MetadataVersion4_0_IV1 adds eligible leader replicas (KIP-966):
	// PartitionRecord and PartitionChangeRecord v2.
	MetadataVersion4_0_IV1 int16 = 23
	// MetadataVersion4_3_IV0 adds cordoned log directories (KIP-1066):
	// RegisterBrokerRecord v4.
	MetadataVersion4_3_IV0 int16 = 30
	// MaxMetadataVersion is the highest metadata.version the image
	// accepts: 4.3-IV0, the latest production level of Kafka 4.3.1.
	MaxMetadataVersion int16 = MetadataVersion4_3_IV0
)

// Image is the metadata of a cluster after replaying a prefix of the
// metadata log: Kafka's MetadataImage. An Image is immutable: every
// method only reads, values it returns must not be modified, and it is
// safe to share between goroutines without locks. A [Delta] derives the
// next image from it; the two share every part the delta did not change,
// so publishing an image after a small change costs O(change · log n).
//
// The image does not hold the voter set or the kraft.version level: both
// live in control records that the consensus layer owns.
type Image struct {
	offset int64
	epoch  int32
	// changed is the offset of the last record that changed the image
	// ([Image.ChangedAt]).
	changed int64
	// edit is nil in a published image; in a Delta's working copy it is
	// the token of the nodes the delta may still change in place.
	edit *editToken

	features    FeaturesImage
	cluster     ClusterImage
	topics      TopicsImage
	configs     ConfigsImage
	quotas      ClientQuotasImage
	producerIDs ProducerIDsImage
	acls        ACLsImage
	scram       ScramImage
	tokens      DelegationTokensImage
}

// EmptyImage returns the image before any record: offset and epoch -1,
// no metadata.version, nothing registered, no producer id allocated.
func EmptyImage() *Image {
	return &Image{
		offset:  -1,
		epoch:   -1,
		changed: -1,
		features: FeaturesImage{
			levels: newPMap[string, int16](strings.Compare),
		},
		cluster: ClusterImage{
			brokers:     newPMap[int32, *Broker](cmp.Compare[int32]),
			controllers: newPMap[int32, *Controller](cmp.Compare[int32]),
		},
		topics: TopicsImage{
			byID:    newPMap[[16]byte, *Topic](compareUUID),
			byName:  newPMap[string, [16]byte](strings.Compare),
			byLegal: newPMap[string, string](strings.Compare),
		},
		configs: ConfigsImage{
			resources: newPMap[ConfigResource, pmap[string, string]](compareConfigResource),
		},
		quotas: ClientQuotasImage{
			entities: newPMap[string, *ClientQuota](strings.Compare),
		},
		acls: ACLsImage{
			byID:      newPMap[[16]byte, *ACL](compareUUID),
			byBinding: newPMap[string, [16]byte](strings.Compare),
		},
		scram: ScramImage{
			creds: newPMap[scramKey, *ScramCredential](compareScramKey),
		},
		tokens: DelegationTokensImage{
			byID: newPMap[string, *DelegationToken](strings.Compare),
		},
		producerIDs: ProducerIDsImage{next: -1},
	}
}

// Offset returns the offset of the last record applied to the image, or
// -1 for the empty image. Records of a metadata transaction count only
// once the transaction has ended.
func (img *Image) Offset() int64 { return img.offset }

// ChangedAt returns the offset of the last record that changed the
// image, or -1 for an image no record changed: [Image.Offset] less the
// records that change nothing (NoOpRecords, records a replica skipped,
// aborted transactions). Every record of a snapshot counts as a change at
// the snapshot's offset, so an image loaded from a snapshot may name a
// later offset than one replayed from the log: ChangedAt never names an
// offset before the true last change. A compare-and-set submission
// (raft.IfUnchangedSince) is checked against it.
func (img *Image) ChangedAt() int64 { return img.changed }

// Epoch returns the leader epoch of the record at [Image.Offset], or -1
// for the empty image.
func (img *Image) Epoch() int32 { return img.epoch }

// Features returns the finalized feature levels.
func (img *Image) Features() FeaturesImage { return img.features }

// Cluster returns the registered brokers and controllers.
func (img *Image) Cluster() ClusterImage { return img.cluster }

// Topics returns the topics and their partitions.
func (img *Image) Topics() TopicsImage { return img.topics }

// Configs returns the dynamic configurations.
func (img *Image) Configs() ConfigsImage { return img.configs }

// ClientQuotas returns the client quotas.
func (img *Image) ClientQuotas() ClientQuotasImage { return img.quotas }

// ProducerIDs returns the producer id allocation state.
func (img *Image) ProducerIDs() ProducerIDsImage { return img.producerIDs }

// ACLs returns the access control entries.
func (img *Image) ACLs() ACLsImage { return img.acls }

// Scram returns the SCRAM credentials.
func (img *Image) Scram() ScramImage { return img.scram }

// DelegationTokens returns the delegation tokens.
func (img *Image) DelegationTokens() DelegationTokensImage { return img.tokens }

// FeaturesImage holds the finalized feature levels (Kafka's
// FeaturesImage) and the ZooKeeper migration state.
type FeaturesImage struct {
	metadataVersion int16
	levels          pmap[string, int16] // every feature but metadata.version, level > 0
	zkMigration     int8
}

// MetadataVersion returns the finalized metadata.version level, or 0 when
// no FeatureLevelRecord has set it yet.
func (f FeaturesImage) MetadataVersion() int16 { return f.metadataVersion }

// Level returns the finalized level of a feature: metadata.version or any
// other FeatureLevelRecord feature; 0 when it is not finalized.
func (f FeaturesImage) Level(name string) int16 {
	if name == FeatureMetadataVersion {
		return f.metadataVersion
	}
	l, _ := f.levels.Get(name)
	return l
}

// Levels iterates over the finalized levels of the features other than
// metadata.version, by name.
func (f FeaturesImage) Levels() iter.Seq2[string, int16] {
	return f.levels.All()
}

// ZkMigrationState returns the ZooKeeper migration state of the last
// ZkMigrationStateRecord: 0 NONE (also when there was none), 1
// PRE_MIGRATION, 2 MIGRATION, 3 POST_MIGRATION.
func (f FeaturesImage) ZkMigrationState() int8 { return f.zkMigration }

// compareUUID orders UUIDs by their bytes, as bytes.Compare does, in two
// 64-bit comparisons: a snapshot load compares topic ids some 20 times
// per partition.
func compareUUID(a, b [16]byte) int {
	if c := cmp.Compare(binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(b[:8])); c != 0 {
		return c
	}
	return cmp.Compare(binary.BigEndian.Uint64(a[8:]), binary.BigEndian.Uint64(b[8:]))
}
