package metadata

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// maxTopicNameLength is Kafka's limit on topic names (Topic.MAX_NAME_LENGTH).
const maxTopicNameLength = 249

// metadataTopicName is the name of the metadata log's partition; no
// topic may take it.
const metadataTopicName = "__cluster_metadata"

// checkTopicName applies Kafka's Topic.validate: a name is 1 to 249
// characters of [a-zA-Z0-9._-] and is neither "." nor "..". The name
// __cluster_metadata is reserved for the metadata log.
func checkTopicName(name string) error {
	switch {
	case name == "":
		return reject(ErrInvalidRecord, "empty topic name")
	case name == metadataTopicName:
		return reject(ErrInvalidRecord, "topic name %s is reserved for the metadata log", name)
	case name == "." || name == "..":
		return reject(ErrInvalidRecord, "topic name %q is not allowed", name)
	case len(name) > maxTopicNameLength:
		return reject(ErrInvalidRecord, "topic name of %d characters is longer than %d", len(name), maxTopicNameLength)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return reject(ErrInvalidRecord, "topic name %q holds the character %q", name, c)
		}
	}
	return nil
}

// replayTopic applies a TopicRecord. Rules (Kafka's controller rejects
// these CreateTopics with TOPIC_ALREADY_EXISTS or INVALID_TOPIC_EXCEPTION):
// the name is valid; the id is neither zero nor the metadata topic id;
// no topic has the name or the id; and no topic name collides with it
// once '.' and '_' are made equal.
func (img *Image) replayTopic(r *TopicRecord) error {
	if err := checkTopicName(r.Name); err != nil {
		return err
	}
	if r.TopicId == ([16]byte{}) || r.TopicId == MetadataTopicID() {
		return reject(ErrInvalidRecord, "topic %s has the reserved id %s", r.Name, formatUUID(r.TopicId))
	}
	t := &img.topics
	if _, ok := t.byName.Get(r.Name); ok {
		return reject(ErrAlreadyExists, "topic %s already exists", r.Name)
	}
	if old, ok := t.byID.Get(r.TopicId); ok {
		return reject(ErrAlreadyExists, "topic id %s is already used by topic %s", formatUUID(r.TopicId), old.Name)
	}
	legal, collides := legalName(r.Name)
	if collides {
		if other, ok := t.byLegal.Get(legal); ok {
			return reject(ErrInvalidRecord, "topic %s collides with existing topic %s", r.Name, other)
		}
		t.byLegal = t.byLegal.with(legal, r.Name, img.edit)
	}
	t.byID = t.byID.with(r.TopicId, &Topic{Name: r.Name, ID: r.TopicId, partitions: newPartitionMap(), edit: img.edit}, img.edit)
	t.byName = t.byName.with(r.Name, r.TopicId, img.edit)
	return nil
}

// legalName returns the name with '.' turned into '_', and whether the
// name holds a '.' or '_' at all (only such names can collide).
func legalName(name string) (string, bool) {
	if !strings.ContainsAny(name, "._") {
		return name, false
	}
	return strings.ReplaceAll(name, ".", "_"), true
}

// replayRemoveTopic removes a topic, its partitions and its configs
// (Kafka's MetadataDelta.replay(RemoveTopicRecord) also deletes the
// topic's configuration). The topic must exist.
func (img *Image) replayRemoveTopic(r *RemoveTopicRecord) error {
	t := &img.topics
	topic, ok := t.byID.Get(r.TopicId)
	if !ok {
		return reject(ErrNotFound, "no topic with id %s", formatUUID(r.TopicId))
	}
	t.byID = t.byID.without(r.TopicId, img.edit)
	t.byName = t.byName.without(topic.Name, img.edit)
	if legal, collides := legalName(topic.Name); collides {
		t.byLegal = t.byLegal.without(legal, img.edit)
	}
	img.configs.resources = img.configs.resources.without(ConfigResource{Type: ConfigResourceTopic, Name: topic.Name}, img.edit)
	return nil
}

// replayPartition applies a PartitionRecord. Rules: the topic exists;
// the partition id is not negative and the partition does not exist yet
// (Kafka's controller only creates new partitions); the partition state
// is valid (see checkPartition). Replicas on brokers that are not
// registered are accepted: Kafka keeps replicas on unregistered brokers,
// and a snapshot holds them.
func (img *Image) replayPartition(r *PartitionRecord) error {
	topic, ok := img.topics.byID.Get(r.TopicId)
	if !ok {
		return reject(ErrNotFound, "partition %d of unknown topic id %s", r.PartitionId, formatUUID(r.TopicId))
	}
	if r.PartitionId < 0 {
		return reject(ErrInvalidRecord, "topic %s partition id %d is negative", topic.Name, r.PartitionId)
	}
	if _, ok := topic.partitions.Get(r.PartitionId); ok {
		return reject(ErrAlreadyExists, "partition %s-%d already exists", topic.Name, r.PartitionId)
	}
	if len(r.Directories) > 0 && len(r.Directories) != len(r.Replicas) {
		return reject(ErrInvalidRecord, "partition %s-%d has %d directories for %d replicas", topic.Name, r.PartitionId, len(r.Directories), len(r.Replicas))
	}
	if r.LeaderEpoch < 0 || r.PartitionEpoch < 0 {
		return reject(ErrInvalidRecord, "partition %s-%d has leader epoch %d and partition epoch %d", topic.Name, r.PartitionId, r.LeaderEpoch, r.PartitionEpoch)
	}
	p := &Partition{
		Replicas:            cloneNonEmpty(r.Replicas),
		Directories:         defaultToMigrating(r.Directories, len(r.Replicas), false),
		ISR:                 cloneUnlessEqual(r.Isr, r.Replicas),
		RemovingReplicas:    cloneNonEmpty(r.RemovingReplicas),
		AddingReplicas:      cloneNonEmpty(r.AddingReplicas),
		ELR:                 cloneNonEmpty(r.EligibleLeaderReplicas),
		LastKnownELR:        cloneNonEmpty(r.LastKnownElr),
		Leader:              r.Leader,
		LeaderRecoveryState: r.LeaderRecoveryState,
		LeaderEpoch:         r.LeaderEpoch,
		PartitionEpoch:      r.PartitionEpoch,
	}
	if p.ISR == nil && len(r.Isr) > 0 {
		p.ISR = p.Replicas
	}
	if err := checkPartition(topic.Name, r.PartitionId, p); err != nil {
		return err
	}
	img.setPartition(topic, r.PartitionId, p)
	return nil
}

// cloneUnlessEqual copies a, or returns nil when a is empty or holds
// the same ids as b (the caller then shares b's copy).
func cloneUnlessEqual(a, b []int32) []int32 {
	if slices.Equal(a, b) {
		return nil
	}
	return cloneNonEmpty(a)
}

// shareIfEqual returns b when a holds the same ids, so that equal lists
// of an immutable partition share memory.
func shareIfEqual(a, b []int32) []int32 {
	if a != nil && slices.Equal(a, b) {
		return b
	}
	return a
}

// setPartition stores p as partition id of topic. A topic that this
// delta already copied (stamped with its edit token) is changed in
// place.
func (img *Image) setPartition(topic *Topic, id int32, p *Partition) {
	if img.edit != nil && topic.edit == img.edit {
		topic.partitions = topic.partitions.with(id, p, img.edit)
		return
	}
	nt := *topic
	nt.edit = img.edit
	nt.partitions = topic.partitions.with(id, p, img.edit)
	img.topics.byID = img.topics.byID.with(topic.ID, &nt, img.edit)
}

// defaultToMigrating returns the directories of a partition: dirs (a
// copy unless owned, that is already held by the image), or every
// replica in DirectoryMigrating when dirs is empty or only holds
// DirectoryMigrating (Kafka's PartitionRegistration.defaultToMigrating).
func defaultToMigrating(dirs [][16]byte, replicas int, owned bool) [][16]byte {
	migrating := DirectoryMigrating()
	all := true
	for _, d := range dirs {
		if d != migrating {
			all = false
			break
		}
	}
	if !all {
		if owned {
			return dirs
		}
		return slices.Clone(dirs)
	}
	if owned && len(dirs) == replicas {
		return dirs
	}
	if replicas == 0 {
		return nil
	}
	out := make([][16]byte, replicas)
	for i := range out {
		out[i] = migrating
	}
	return out
}

// checkPartition checks the invariants Kafka's controller keeps for a
// partition:
//   - there is at least one replica, every replica id is not negative,
//     and no list holds a broker twice;
//   - ISR, removing and adding replicas are subsets of the replicas, and
//     a replica is not both being added and removed;
//   - the ELR holds replicas outside the ISR (KIP-966);
//   - the leader is NoLeader or a member of the ISR (after an unclean
//     election Kafka makes the ISR just the leader);
//   - the leader recovery state is 0 or 1 (Kafka keeps 1 when the
//     recovering leader goes away).
func checkPartition(topic string, id int32, p *Partition) error {
	bad := func(format string, args ...any) error {
		return reject(ErrInvalidRecord, "partition %s-%d: %s", topic, id, fmt.Sprintf(format, args...))
	}
	if len(p.Replicas) == 0 {
		return bad("no replicas")
	}
	lists := []struct {
		name string
		ids  []int32
	}{
		{"replicas", p.Replicas}, {"isr", p.ISR}, {"removing replicas", p.RemovingReplicas},
		{"adding replicas", p.AddingReplicas}, {"elr", p.ELR}, {"last known elr", p.LastKnownELR},
	}
	for _, l := range lists {
		for _, b := range l.ids {
			if b < 0 {
				return bad("invalid broker id %d in %s", b, l.name)
			}
		}
		if b, ok := firstDuplicate(l.ids); ok {
			return bad("broker %d appears twice in %s", b, l.name)
		}
	}
	replicas := newIDSet(p.Replicas)
	for _, l := range lists[1:4] {
		for _, b := range l.ids {
			if !replicas.has(b) {
				return bad("broker %d in %s is not a replica", b, l.name)
			}
		}
	}
	removing := newIDSet(p.RemovingReplicas)
	for _, b := range p.AddingReplicas {
		if removing.has(b) {
			return bad("broker %d is both being added and removed", b)
		}
	}
	isr := newIDSet(p.ISR)
	for _, b := range p.ELR {
		if isr.has(b) {
			return bad("broker %d is in both the isr and the elr", b)
		}
	}
	if p.Leader != NoLeader && !isr.has(p.Leader) {
		return bad("leader %d is not in the isr", p.Leader)
	}
	if p.LeaderRecoveryState != LeaderRecovered && p.LeaderRecoveryState != LeaderRecovering {
		return bad("unknown leader recovery state %d", p.LeaderRecoveryState)
	}
	return nil
}

// smallSet is the list length up to which membership is a linear scan;
// longer lists use a map, so that validating a record stays linear in
// its size whatever a client sends.
const smallSet = 16

// idSet answers membership in a list of broker ids.
type idSet struct {
	ids []int32
	m   map[int32]struct{}
}

func newIDSet(ids []int32) idSet {
	if len(ids) <= smallSet {
		return idSet{ids: ids}
	}
	m := make(map[int32]struct{}, len(ids))
	for _, b := range ids {
		m[b] = struct{}{}
	}
	return idSet{m: m}
}

func (s idSet) has(b int32) bool {
	if s.m != nil {
		_, ok := s.m[b]
		return ok
	}
	return slices.Contains(s.ids, b)
}

// firstDuplicate returns the first element of s that repeats an earlier
// one.
func firstDuplicate[T comparable](s []T) (T, bool) {
	if len(s) <= smallSet {
		for i, v := range s {
			if slices.Contains(s[:i], v) {
				return v, true
			}
		}
	} else {
		seen := make(map[T]struct{}, len(s))
		for _, v := range s {
			if _, ok := seen[v]; ok {
				return v, true
			}
			seen[v] = struct{}{}
		}
	}
	var zero T
	return zero, false
}

// replayPartitionChange applies a PartitionChangeRecord (Kafka's
// PartitionRegistration.merge): null lists are unchanged, Leader -2 is
// unchanged and -1 is no leader, a leader change bumps the leader
// epoch, and every change bumps the partition epoch. Directories given
// must match the replicas in length; when the replicas change without
// directories, the existing directories are kept, so their number must
// still match unless they are all DirectoryMigrating. Rules: the topic and the
// partition exist, LeaderRecoveryState is -1, 0 or 1, and the resulting
// partition is valid (see checkPartition).
func (img *Image) replayPartitionChange(r *PartitionChangeRecord) error {
	topic, ok := img.topics.byID.Get(r.TopicId)
	if !ok {
		return reject(ErrNotFound, "partition %d of unknown topic id %s", r.PartitionId, formatUUID(r.TopicId))
	}
	old, ok := topic.partitions.Get(r.PartitionId)
	if !ok {
		return reject(ErrNotFound, "partition %s-%d does not exist", topic.Name, r.PartitionId)
	}
	if r.Leader < NoLeaderChange {
		return reject(ErrInvalidRecord, "partition %s-%d: invalid leader %d", topic.Name, r.PartitionId, r.Leader)
	}
	if r.LeaderRecoveryState < -1 || r.LeaderRecoveryState > 1 {
		return reject(ErrInvalidRecord, "partition %s-%d: unknown leader recovery state %d", topic.Name, r.PartitionId, r.LeaderRecoveryState)
	}
	if r.Replicas != nil && len(r.Directories) > 0 && len(r.Directories) != len(r.Replicas) {
		return reject(ErrInvalidRecord, "partition %s-%d has %d directories for %d replicas", topic.Name, r.PartitionId, len(r.Directories), len(r.Replicas))
	}
	p := *old
	if r.Replicas != nil {
		p.Replicas = cloneNonEmpty(r.Replicas)
	}
	if r.Directories != nil {
		p.Directories = defaultToMigrating(r.Directories, len(p.Replicas), false)
	} else {
		p.Directories = defaultToMigrating(old.Directories, len(p.Replicas), true)
	}
	if len(p.Directories) != len(p.Replicas) {
		return reject(ErrInvalidRecord, "partition %s-%d would have %d directories for %d replicas", topic.Name, r.PartitionId, len(p.Directories), len(p.Replicas))
	}
	if r.Isr != nil {
		p.ISR = cloneNonEmpty(r.Isr)
	}
	if r.RemovingReplicas != nil {
		p.RemovingReplicas = cloneNonEmpty(r.RemovingReplicas)
	}
	if r.AddingReplicas != nil {
		p.AddingReplicas = cloneNonEmpty(r.AddingReplicas)
	}
	if r.EligibleLeaderReplicas != nil {
		p.ELR = cloneNonEmpty(r.EligibleLeaderReplicas)
	}
	if r.LastKnownElr != nil {
		p.LastKnownELR = cloneNonEmpty(r.LastKnownElr)
	}
	if r.Leader != NoLeaderChange {
		p.Leader = r.Leader
		p.LeaderEpoch++
	}
	if r.LeaderRecoveryState != -1 {
		p.LeaderRecoveryState = r.LeaderRecoveryState
	}
	p.PartitionEpoch++
	if err := checkPartition(topic.Name, r.PartitionId, &p); err != nil {
		return err
	}
	p.ISR = shareIfEqual(p.ISR, p.Replicas)
	img.setPartition(topic, r.PartitionId, &p)
	return nil
}

// replayClearElr applies a ClearElrRecord: it empties the ELR and last
// known ELR of every partition of the named topic, or of every topic
// when the name is empty, bumping the partition epoch of each partition
// it changes (Kafka replays it as one PartitionChangeRecord per such
// partition). A named topic must exist.
func (img *Image) replayClearElr(r *ClearElrRecord) error {
	if r.TopicName != "" {
		topic, ok := img.topics.ByName(r.TopicName)
		if !ok {
			return reject(ErrNotFound, "topic %s does not exist", r.TopicName)
		}
		img.clearElr(topic)
		return nil
	}
	var topics []*Topic
	for t := range img.topics.byID.Values() {
		topics = append(topics, t)
	}
	for _, t := range topics {
		img.clearElr(t)
	}
	return nil
}

func (img *Image) clearElr(topic *Topic) {
	type change struct {
		id int32
		p  *Partition
	}
	var changes []change
	for id, p := range topic.partitions.All() {
		if len(p.ELR) == 0 && len(p.LastKnownELR) == 0 {
			continue
		}
		np := *p
		np.ELR, np.LastKnownELR = nil, nil
		np.PartitionEpoch++
		changes = append(changes, change{id, &np})
	}
	for _, c := range changes {
		img.setPartition(topic, c.id, c.p)
		topic, _ = img.topics.byID.Get(topic.ID)
	}
}

// formatUUID writes a UUID the way Kafka prints it: URL-safe base64
// without padding.
func formatUUID(u [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(u[:])
}
