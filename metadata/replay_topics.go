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
	return img.replayPackedPartition(r, nil, nil)
}

// runState is what the replay of a PreparedRun keeps from record to
// record.
type runState struct {
	// last is the topic of the record before, what topics.byID holds
	// under its id, or nil.
	last *Topic
	// arena holds the partitions the replay packs.
	arena *partitionArena
}

// replayPackedPartition is replayPartition with r's partition packed
// beforehand when p is not nil: r then passed checkPartition (which
// depends on nothing but r), and p is what packing it returns. The
// checks that depend on the image run in the same order either way, so
// that a record is refused with the same error. rs, when not nil, is the
// state of a PreparedRun's replay: its last topic is used instead of a
// lookup when it is r's, and set to r's topic once r is replayed; a
// partition packed here goes to its arena.
func (img *Image) replayPackedPartition(r *PartitionRecord, p *Partition, rs *runState) error {
	var topic *Topic
	var arena *partitionArena
	if rs != nil {
		topic, arena = rs.last, rs.arena
	}
	if topic == nil || topic.ID != r.TopicId {
		var ok bool
		if topic, ok = img.topics.byID.Get(r.TopicId); !ok {
			return reject(ErrNotFound, "partition %d of unknown topic id %s", r.PartitionId, formatUUID(r.TopicId))
		}
	}
	if r.PartitionId < 0 {
		return reject(ErrInvalidRecord, "topic %s partition id %d is negative", topic.Name, r.PartitionId)
	}
	if _, ok := topic.partitions.Get(r.PartitionId); ok {
		return reject(ErrAlreadyExists, "partition %s-%d already exists", topic.Name, r.PartitionId)
	}
	if err := checkPartitionRecord(topic.Name, r); err != nil {
		return err
	}
	if p == nil {
		spec := partitionRecordSpec(r)
		if err := checkPartition(topic.Name, r.PartitionId, &spec); err != nil {
			return err
		}
		p = spec.packIn(arena)
	}
	topic = img.setPartitionIn(topic, r.PartitionId, p, arena)
	if rs != nil {
		rs.last = topic
	}
	return nil
}

// checkPartitionRecord checks what replayPartition checks of r before
// checkPartition, beyond the topic and the partition's absence.
func checkPartitionRecord(topic string, r *PartitionRecord) error {
	if len(r.Directories) > 0 && len(r.Directories) != len(r.Replicas) {
		return reject(ErrInvalidRecord, "partition %s-%d has %d directories for %d replicas", topic, r.PartitionId, len(r.Directories), len(r.Replicas))
	}
	if r.LeaderEpoch < 0 || r.PartitionEpoch < 0 {
		return reject(ErrInvalidRecord, "partition %s-%d has leader epoch %d and partition epoch %d", topic, r.PartitionId, r.LeaderEpoch, r.PartitionEpoch)
	}
	return nil
}

// partitionRecordSpec returns the partition r creates, unpacked.
func partitionRecordSpec(r *PartitionRecord) partitionSpec {
	return partitionSpec{
		replicas: r.Replicas, isr: r.Isr, removing: r.RemovingReplicas, adding: r.AddingReplicas,
		elr: r.EligibleLeaderReplicas, lastKnownELR: r.LastKnownElr, dirs: r.Directories,
		leader: r.Leader, leaderRecoveryState: r.LeaderRecoveryState, leaderEpoch: r.LeaderEpoch, partitionEpoch: r.PartitionEpoch,
	}
}

// packPartitionRecord returns r's partition packed in a, or nil when r
// does not pass the checks of replayPartition that depend on r alone.
func packPartitionRecord(r *PartitionRecord, a *partitionArena) *Partition {
	if r.PartitionId < 0 || checkPartitionRecord("", r) != nil {
		return nil
	}
	spec := partitionRecordSpec(r)
	if checkPartition("", r.PartitionId, &spec) != nil {
		return nil
	}
	return spec.packIn(a)
}

// setPartition stores p as partition id of topic and returns the topic
// the image then holds. A topic that this delta already copied (stamped
// with its edit token) is changed in place.
func (img *Image) setPartition(topic *Topic, id int32, p *Partition) *Topic {
	return img.setPartitionIn(topic, id, p, nil)
}

// setPartitionIn is setPartition with the node of a new partition taken
// from a (allocated on its own when a is nil).
func (img *Image) setPartitionIn(topic *Topic, id int32, p *Partition, a *partitionArena) *Topic {
	if img.edit != nil && topic.edit == img.edit {
		topic.partitions = topic.partitions.withLeaf(id, p, img.edit, a.node())
		return topic
	}
	nt := *topic
	nt.edit = img.edit
	nt.partitions = topic.partitions.withLeaf(id, p, img.edit, a.node())
	img.topics.byID = img.topics.byID.with(topic.ID, &nt, img.edit)
	return &nt
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
func checkPartition(topic string, id int32, p *partitionSpec) error {
	if p.plainValid() {
		return nil
	}
	return checkPartitionFully(topic, id, p)
}

// checkPartitionFully is checkPartition without the shortcut of
// plainValid.
func checkPartitionFully(topic string, id int32, p *partitionSpec) error {
	bad := func(format string, args ...any) error {
		return reject(ErrInvalidRecord, "partition %s-%d: %s", topic, id, fmt.Sprintf(format, args...))
	}
	if len(p.replicas) == 0 {
		return bad("no replicas")
	}
	lists := []struct {
		name string
		ids  []int32
	}{
		{"replicas", p.replicas}, {"isr", p.isr}, {"removing replicas", p.removing},
		{"adding replicas", p.adding}, {"elr", p.elr}, {"last known elr", p.lastKnownELR},
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
	replicas := newIDSet(p.replicas)
	for _, l := range lists[1:4] {
		for _, b := range l.ids {
			if !replicas.has(b) {
				return bad("broker %d in %s is not a replica", b, l.name)
			}
		}
	}
	removing := newIDSet(p.removing)
	for _, b := range p.adding {
		if removing.has(b) {
			return bad("broker %d is both being added and removed", b)
		}
	}
	isr := newIDSet(p.isr)
	for _, b := range p.elr {
		if isr.has(b) {
			return bad("broker %d is in both the isr and the elr", b)
		}
	}
	if p.leader != NoLeader && !isr.has(p.leader) {
		return bad("leader %d is not in the isr", p.leader)
	}
	if p.leaderRecoveryState != LeaderRecovered && p.leaderRecoveryState != LeaderRecovering {
		return bad("unknown leader recovery state %d", p.leaderRecoveryState)
	}
	return nil
}

// plainValid reports whether p is a valid partition of the common kind,
// without the lists of a reassignment or of KIP-966, which checkPartition
// then accepts without its general checks. false says nothing: the
// general checks decide.
func (p *partitionSpec) plainValid() bool {
	if len(p.replicas) == 0 || len(p.replicas) > smallSet || len(p.removing)+len(p.adding)+len(p.elr)+len(p.lastKnownELR) > 0 {
		return false
	}
	for i, b := range p.replicas {
		if b < 0 || slices.Contains(p.replicas[:i], b) {
			return false
		}
	}
	if !slices.Equal(p.isr, p.replicas) {
		for i, b := range p.isr {
			if b < 0 || slices.Contains(p.isr[:i], b) || !slices.Contains(p.replicas, b) {
				return false
			}
		}
	}
	return (p.leader == NoLeader || slices.Contains(p.isr, p.leader)) &&
		(p.leaderRecoveryState == LeaderRecovered || p.leaderRecoveryState == LeaderRecovering)
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
	p := old.spec()
	if r.Replicas != nil {
		p.replicas = r.Replicas
	}
	switch {
	case r.Directories != nil:
		p.dirs, p.dirsFrom = r.Directories, nil
	case p.allMigrating():
		// Kept in DirectoryMigrating, one per replica, whatever their number.
		p.dirs, p.dirsFrom = nil, nil
	}
	if !p.allMigrating() && p.numDirs() != len(p.replicas) {
		return reject(ErrInvalidRecord, "partition %s-%d would have %d directories for %d replicas", topic.Name, r.PartitionId, p.numDirs(), len(p.replicas))
	}
	if r.Isr != nil {
		p.isr = r.Isr
	}
	if r.RemovingReplicas != nil {
		p.removing = r.RemovingReplicas
	}
	if r.AddingReplicas != nil {
		p.adding = r.AddingReplicas
	}
	if r.EligibleLeaderReplicas != nil {
		p.elr = r.EligibleLeaderReplicas
	}
	if r.LastKnownElr != nil {
		p.lastKnownELR = r.LastKnownElr
	}
	if r.Leader != NoLeaderChange {
		p.leader = r.Leader
		p.leaderEpoch++
	}
	if r.LeaderRecoveryState != -1 {
		p.leaderRecoveryState = r.LeaderRecoveryState
	}
	p.partitionEpoch++
	if err := checkPartition(topic.Name, r.PartitionId, &p); err != nil {
		return err
	}
	img.setPartition(topic, r.PartitionId, p.pack())
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
		if len(p.ELR()) == 0 && len(p.LastKnownELR()) == 0 {
			continue
		}
		np := p.spec()
		np.elr, np.lastKnownELR = nil, nil
		np.partitionEpoch++
		changes = append(changes, change{id, np.pack()})
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
