// Package metadata holds Kafka's metadata records: the typed records that
// make up the __cluster_metadata log and its snapshots, and the framing
// that turns them into record values.
//
// # Records
//
// Every record type of Kafka 4.3.1 (RegisterBrokerRecord, TopicRecord,
// PartitionRecord, ... 26 in all) is a Go struct generated from a
// definition file in definitions/ by internal/codegen. A record knows its
// [APIKey], carries the version it is encoded at in its Version field, and
// implements [Record]:
//
//	rec := metadata.NewTopicRecord() // defaults from the schema
//	rec.Name, rec.TopicId = "orders", id
//	b, err := metadata.Encode(rec)
//
// NewX constructors and Default methods apply the schema's defaults (for
// example PartitionChangeRecord.Leader is -2, "unchanged"). Nullable
// strings are *string, nullable arrays and bytes use nil for null and a
// non-nil empty slice for empty; non-nullable empty arrays decode as nil.
// UUIDs are [16]byte.
//
// # Framing
//
// A metadata record value is
//
//	uvarint frame version (1) | uvarint api key | uvarint version | body
//
// where the body is the record encoded at that version (every metadata
// record is flexible from version 0: compact strings and arrays, a tagged
// field section after every structure). [Encode] writes this, and [Decode]
// reads it: frame version 0 (Kafka 2.8's preview format) and every other
// frame version is rejected with [ErrUnsupportedFrame], an unknown API key
// yields an [*UnknownAPIKeyError], a version outside the record's range an
// [*UnsupportedVersionError], and malformed or trailing bytes a
// [*DecodeError] naming the record, version and field path.
//
// # Versions and Kafka's encoding rules
//
// Encoding follows Kafka's generated serializers: a field that the target
// version lacks must hold its default (otherwise [*EncodeError]), null is
// allowed only at nullable versions, tagged fields are written only when
// they differ from their default, and strings are at most 32767 bytes.
// Tagged fields that the decoding version does not know are kept in
// UnknownTags and written back unchanged, so decode followed by encode
// reproduces the input bytes exactly. The decoder accepts only the
// canonical encodings Kafka writes (minimal varints, booleans 0 or 1,
// strictly ascending tags, known tagged fields that differ from their
// default), which is what makes that identity hold for every input that
// decodes.
//
// # Image
//
// [Image] is the immutable metadata image (Kafka's MetadataImage): features,
// brokers and controllers, topics and partitions, configs, client quotas,
// producer ids, ACLs, SCRAM credentials and delegation tokens, plus the
// offset and epoch of the last record it reflects. It is built by replaying
// committed records through a [Delta], which validates each record against
// the image and rejects an invalid one with a [*ReplayError] without
// changing anything. Images share structure through a persistent map, so
// publishing after a small change costs O(log n) allocations and readers
// may hold any image for as long as they like, without locks.
// [Image.SnapshotRecords] lists an image in Kafka's snapshot order at the
// record versions of its metadata.version.
//
// # Features
//
// [KnownFeatures] returns the feature rows of Kafka 4.3.1 (server-common's
// Feature and MetadataVersion): every feature with its levels, the
// metadata.version each level is a default from, the levels it depends
// on, and the newest production level. [FeatureRegistry.Supported] gives
// the ranges a node advertises, capped as unstable.feature.versions.enable
// caps them, and [FeatureRegistry.CheckLevel] checks a level as Kafka's
// Feature.validateVersion does; storage format and UpdateFeatures use both.
//
// # Adding or changing a record
//
// Edit or add a file in definitions/ (the format is documented in package
// internal/codegen), then run go generate in this directory. The tests
// fail when a *_gen.go file is stale, when a definition disagrees with
// Kafka's JSON schema, or when a real Kafka log no longer round-trips.
package metadata
