package logstore

import "github.com/krabka-go/krabka/internal/kraft"

// MetadataTopicID is the fixed topic id of __cluster_metadata
// (Uuid.METADATA_TOPIC_ID = Uuid(0, 1)), written to partition.metadata.
var MetadataTopicID = kraft.UUID{15: 1}
