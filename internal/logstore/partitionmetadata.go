package logstore

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/vfs"
)

// PartitionMetadataFileName is the name of the file that records the topic
// id in a partition directory (Kafka's PartitionMetadataFile).
const PartitionMetadataFileName = "partition.metadata"

// EncodePartitionMetadata renders Kafka's partition.metadata text for a
// topic id: "version: 0\ntopic_id: <uuid>", with no final newline.
func EncodePartitionMetadata(topicID kraft.UUID) []byte {
	return []byte("version: 0\ntopic_id: " + topicID.String())
}

// ParsePartitionMetadata parses partition.metadata and returns the topic id.
func ParsePartitionMetadata(data []byte) (kraft.UUID, error) {
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) != 2 {
		return kraft.UUID{}, fmt.Errorf("parse partition.metadata: %d lines, want 2", len(lines))
	}
	v, ok := strings.CutPrefix(lines[0], "version: ")
	if !ok || strings.TrimSpace(v) != "0" {
		return kraft.UUID{}, fmt.Errorf("parse partition.metadata: unsupported version line %q", lines[0])
	}
	id, ok := strings.CutPrefix(lines[1], "topic_id: ")
	if !ok {
		return kraft.UUID{}, fmt.Errorf("parse partition.metadata: bad topic_id line %q", lines[1])
	}
	u, err := kraft.ParseUUID(strings.TrimSpace(id))
	if err != nil {
		return kraft.UUID{}, fmt.Errorf("parse partition.metadata: %w", err)
	}
	return u, nil
}

// ReadPartitionMetadata reads dir/partition.metadata.
func ReadPartitionMetadata(fsys vfs.FS, dir string) (kraft.UUID, error) {
	path := filepath.Join(dir, PartitionMetadataFileName)
	data, err := readSmallFile(fsys, path, 4096)
	if err != nil {
		return kraft.UUID{}, fmt.Errorf("logstore: read partition metadata %s: %w", path, err)
	}
	u, err := ParsePartitionMetadata(data)
	if err != nil {
		return kraft.UUID{}, fmt.Errorf("logstore: read partition metadata %s: %w", path, err)
	}
	return u, nil
}

// WritePartitionMetadata replaces dir/partition.metadata atomically.
func WritePartitionMetadata(fsys vfs.FS, dir string, topicID kraft.UUID) error {
	return writeFileAtomic(fsys, filepath.Join(dir, PartitionMetadataFileName), EncodePartitionMetadata(topicID))
}
