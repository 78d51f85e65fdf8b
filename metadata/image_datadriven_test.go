package metadata_test

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/krabka-go/krabka/metadata"
)

// TestImageDataDriven runs the scenarios in testdata/image. Commands:
//
//	replay [epoch=N] [offset=N]
//	                      replay the records of the input, one a line,
//	                      at consecutive offsets (from N); print each
//	                      rejection
//	image                 print the image the delta publishes now
//	snapshot              print the image's snapshot records
//	publish               continue with a new delta on the published image
//	reload                replace the image by the one loaded from its
//	                      own snapshot records, and check it prints the same
//	reset                 start again from the empty image
//
// A record line is "<type> key=value ..."; see parseRecord.
func TestImageDataDriven(t *testing.T) {
	datadriven.Walk(t, "testdata/image", func(t *testing.T, path string) {
		h := newImageHarness()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			return h.run(t, d)
		})
	})
}

type imageHarness struct {
	delta  *metadata.Delta
	offset int64
}

func newImageHarness() *imageHarness {
	return &imageHarness{delta: metadata.NewDelta(metadata.EmptyImage())}
}

func (h *imageHarness) run(t *testing.T, d *datadriven.TestData) string {
	switch d.Cmd {
	case "reset":
		*h = *newImageHarness()
		return "ok"
	case "replay":
		epoch := 1
		d.MaybeScanArgs(t, "epoch", &epoch)
		if d.HasArg("offset") {
			var off int64
			d.ScanArgs(t, "offset", &off)
			h.offset = off - 1
		}
		var out strings.Builder
		for line := range strings.SplitSeq(strings.TrimSpace(d.Input), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			rec, err := parseRecord(line)
			if err != nil {
				t.Fatalf("%s: %v", d.Pos, err)
			}
			h.offset++
			if err := h.delta.Replay(rec, h.offset, int32(epoch)); err != nil {
				var re *metadata.ReplayError
				if !errors.As(err, &re) {
					t.Fatalf("%s: error %v is not a *ReplayError", d.Pos, err)
				}
				fmt.Fprintf(&out, "rejected [%s]: %v\n", kindName(re.Kind), err)
			}
		}
		if h.delta.InTransaction() {
			out.WriteString("transaction open\n")
		}
		if out.Len() == 0 {
			return "ok"
		}
		return out.String()
	case "image":
		return printImage(h.delta.Apply())
	case "snapshot":
		var out strings.Builder
		for r := range h.delta.Apply().SnapshotRecords() {
			fmt.Fprintf(&out, "%s v%d%s\n", r.APIKey(), r.GetVersion(), formatFields(reflect.ValueOf(r).Elem()))
		}
		return out.String()
	case "publish":
		img := h.delta.Apply()
		h.delta = metadata.NewDelta(img)
		return fmt.Sprintf("published offset %d", img.Offset())
	case "reload":
		img := h.delta.Apply()
		d2 := metadata.NewDelta(metadata.EmptyImage())
		for r := range img.SnapshotRecords() {
			b, err := metadata.Encode(r)
			if err != nil {
				t.Fatalf("%s: encode %s: %v", d.Pos, r.APIKey(), err)
			}
			r2, err := metadata.Decode(b)
			if err != nil {
				t.Fatalf("%s: decode %s: %v", d.Pos, r.APIKey(), err)
			}
			if err := d2.Replay(r2, img.Offset(), img.Epoch()); err != nil {
				t.Fatalf("%s: reload: %v", d.Pos, err)
			}
		}
		got, want := printImage(d2.Apply()), printImage(img)
		if img.Features().MetadataVersion() > metadata.MetadataVersion3_9_IV0 {
			// Kafka 4.x snapshots carry no ZooKeeper migration state.
			want = strings.Replace(want, fmt.Sprintf(" zk-migration=%d", img.Features().ZkMigrationState()), "", 1)
		}
		if got != want {
			t.Fatalf("%s: reloaded image differs:\n%s\nwant\n%s", d.Pos, got, want)
		}
		h.delta = d2
		return "reloaded"
	}
	t.Fatalf("%s: unknown command %s", d.Pos, d.Cmd)
	return ""
}

func kindName(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{metadata.ErrNotFound, "not-found"}, {metadata.ErrAlreadyExists, "exists"},
		{metadata.ErrInvalidRecord, "invalid"}, {metadata.ErrStaleBrokerEpoch, "stale-epoch"},
		{metadata.ErrUnsupportedFeature, "unsupported"}, {metadata.ErrTransactionState, "transaction"},
		{metadata.ErrOffsetOrder, "order"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "?"
}

// testUUID maps a small number to a UUID: the number in the low 8 bytes.
// So 1 is the metadata topic id and 2 is DirectoryMigrating.
func testUUID(n uint64) [16]byte {
	var u [16]byte
	binary.BigEndian.PutUint64(u[8:], n)
	return u
}

func showUUID(u [16]byte) string {
	if binary.BigEndian.Uint64(u[:8]) == 0 {
		return strconv.FormatUint(binary.BigEndian.Uint64(u[8:]), 10)
	}
	return base64.RawURLEncoding.EncodeToString(u[:])
}

// recordArgs holds the key=value fields of a record line.
type recordArgs struct {
	vals map[string]string
	err  error
}

func (a *recordArgs) has(k string) bool { _, ok := a.vals[k]; return ok }

func (a *recordArgs) str(k, def string) string {
	if v, ok := a.vals[k]; ok {
		return v
	}
	return def
}

func (a *recordArgs) strPtr(k string) *string {
	if v, ok := a.vals[k]; ok {
		return &v
	}
	return nil
}

func (a *recordArgs) int(k string, def int64) int64 {
	v, ok := a.vals[k]
	if !ok {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil && a.err == nil {
		a.err = fmt.Errorf("%s=%s: %w", k, v, err)
	}
	return n
}

func (a *recordArgs) bool(k string) bool { return a.str(k, "false") == "true" }

// ints parses "1,2,3"; an absent key is nil, "k=" an empty list.
func (a *recordArgs) ints(k string) []int32 {
	v, ok := a.vals[k]
	if !ok {
		return nil
	}
	out := []int32{}
	for s := range strings.SplitSeq(v, ",") {
		if s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil && a.err == nil {
			a.err = fmt.Errorf("%s=%s: %w", k, v, err)
		}
		out = append(out, int32(n))
	}
	return out
}

func (a *recordArgs) uuids(k string) [][16]byte {
	ns := a.ints(k)
	if ns == nil {
		return nil
	}
	out := [][16]byte{}
	for _, n := range ns {
		out = append(out, testUUID(uint64(n)))
	}
	return out
}

// parseRecord parses one record line.
func parseRecord(line string) (metadata.Record, error) {
	fields := strings.Fields(line)
	a := &recordArgs{vals: map[string]string{}}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		a.vals[k] = v
	}
	var rec metadata.Record
	switch fields[0] {
	case "noop":
		rec = metadata.NewNoOpRecord()
	case "begin":
		r := metadata.NewBeginTransactionRecord()
		r.Name = a.strPtr("name")
		rec = r
	case "end":
		rec = metadata.NewEndTransactionRecord()
	case "abort":
		r := metadata.NewAbortTransactionRecord()
		r.Reason = a.strPtr("reason")
		rec = r
	case "feature":
		r := metadata.NewFeatureLevelRecord()
		r.Name, r.FeatureLevel = a.str("name", ""), int16(a.int("level", 0))
		rec = r
	case "zk":
		r := metadata.NewZkMigrationStateRecord()
		r.ZkMigrationState = int8(a.int("state", 0))
		rec = r
	case "broker":
		r := metadata.NewRegisterBrokerRecord()
		r.Version = int16(a.int("v", 3))
		r.BrokerId, r.BrokerEpoch = int32(a.int("id", 0)), a.int("epoch", 0)
		r.IncarnationId = testUUID(uint64(a.int("inc", 1000+a.int("id", 0))))
		for _, l := range strings.Split(a.str("listeners", "PLAINTEXT:localhost:9092"), ",") {
			p := strings.Split(l, ":")
			port, _ := strconv.Atoi(p[len(p)-1])
			r.EndPoints = append(r.EndPoints, metadata.RegisterBrokerRecordBrokerEndpoint{Name: p[0], Host: p[1], Port: uint16(port)})
		}
		parseFeatures(a.str("features", "metadata.version:7-30"), func(n string, lo, hi int16) {
			r.Features = append(r.Features, metadata.RegisterBrokerRecordBrokerFeature{Name: n, MinSupportedVersion: lo, MaxSupportedVersion: hi})
		})
		r.Rack = a.strPtr("rack")
		r.Fenced, r.InControlledShutdown = a.str("fenced", "true") == "true", a.bool("shutdown")
		r.LogDirs = a.uuids("dirs")
		if r.LogDirs == nil {
			r.LogDirs = [][16]byte{}
		}
		rec = r
	case "unregister":
		r := metadata.NewUnregisterBrokerRecord()
		r.BrokerId, r.BrokerEpoch = int32(a.int("id", 0)), a.int("epoch", 0)
		rec = r
	case "fence":
		r := metadata.NewFenceBrokerRecord()
		r.Id, r.Epoch = int32(a.int("id", 0)), a.int("epoch", 0)
		rec = r
	case "unfence":
		r := metadata.NewUnfenceBrokerRecord()
		r.Id, r.Epoch = int32(a.int("id", 0)), a.int("epoch", 0)
		rec = r
	case "broker-change":
		r := metadata.NewBrokerRegistrationChangeRecord()
		r.Version = 2
		r.BrokerId, r.BrokerEpoch = int32(a.int("id", 0)), a.int("epoch", 0)
		r.Fenced, r.InControlledShutdown = int8(a.int("fenced", 0)), int8(a.int("shutdown", 0))
		r.LogDirs = a.uuids("dirs")
		if a.has("cordoned") {
			r.Version = 3
			r.CordonedLogDirs = a.uuids("cordoned")
		}
		rec = r
	case "controller":
		r := metadata.NewRegisterControllerRecord()
		r.ControllerId = int32(a.int("id", 0))
		r.IncarnationId = testUUID(uint64(a.int("inc", 2000+a.int("id", 0))))
		for _, l := range strings.Split(a.str("listeners", "CONTROLLER:localhost:9093"), ",") {
			p := strings.Split(l, ":")
			port, _ := strconv.Atoi(p[len(p)-1])
			r.EndPoints = append(r.EndPoints, metadata.RegisterControllerRecordControllerEndpoint{Name: p[0], Host: p[1], Port: uint16(port)})
		}
		parseFeatures(a.str("features", "metadata.version:7-30"), func(n string, lo, hi int16) {
			r.Features = append(r.Features, metadata.RegisterControllerRecordControllerFeature{Name: n, MinSupportedVersion: lo, MaxSupportedVersion: hi})
		})
		rec = r
	case "topic":
		r := metadata.NewTopicRecord()
		r.Name, r.TopicId = a.str("name", ""), testUUID(uint64(a.int("id", 0)))
		rec = r
	case "partition":
		r := metadata.NewPartitionRecord()
		r.Version = int16(a.int("v", 2))
		r.TopicId, r.PartitionId = testUUID(uint64(a.int("topic", 0))), int32(a.int("id", 0))
		r.Replicas = a.ints("replicas")
		r.Isr = r.Replicas
		if a.has("isr") {
			r.Isr = a.ints("isr")
		}
		r.Leader = -1
		if len(r.Isr) > 0 {
			r.Leader = r.Isr[0]
		}
		r.Leader = int32(a.int("leader", int64(r.Leader)))
		r.RemovingReplicas, r.AddingReplicas = a.ints("removing"), a.ints("adding")
		r.LeaderEpoch, r.PartitionEpoch = int32(a.int("leader-epoch", 0)), int32(a.int("epoch", 0))
		r.LeaderRecoveryState = int8(a.int("recovery", 0))
		r.Directories = a.uuids("dirs")
		r.EligibleLeaderReplicas, r.LastKnownElr = a.ints("elr"), a.ints("last-elr")
		rec = r
	case "partition-change":
		r := metadata.NewPartitionChangeRecord()
		r.Version = int16(a.int("v", 2))
		r.TopicId, r.PartitionId = testUUID(uint64(a.int("topic", 0))), int32(a.int("id", 0))
		r.Replicas, r.Isr = a.ints("replicas"), a.ints("isr")
		r.Leader = int32(a.int("leader", -2))
		r.RemovingReplicas, r.AddingReplicas = a.ints("removing"), a.ints("adding")
		r.LeaderRecoveryState = int8(a.int("recovery", -1))
		r.Directories = a.uuids("dirs")
		r.EligibleLeaderReplicas, r.LastKnownElr = a.ints("elr"), a.ints("last-elr")
		rec = r
	case "clear-elr":
		r := metadata.NewClearElrRecord()
		r.TopicName = a.str("topic", "")
		rec = r
	case "remove-topic":
		r := metadata.NewRemoveTopicRecord()
		r.TopicId = testUUID(uint64(a.int("id", 0)))
		rec = r
	case "config":
		r := metadata.NewConfigRecord()
		r.ResourceType, r.ResourceName = int8(a.int("type", 2)), a.str("name", "")
		r.Name, r.Value = a.str("key", ""), a.strPtr("value")
		rec = r
	case "quota":
		r := metadata.NewClientQuotaRecord()
		for _, typ := range []string{"user", "client-id", "ip", "other"} {
			if v, ok := a.vals[typ]; ok {
				e := metadata.ClientQuotaRecordEntityData{EntityType: typ}
				if v != "<default>" {
					e.EntityName = &v
				}
				r.Entity = append(r.Entity, e)
			}
		}
		r.Key, r.Remove = a.str("key", ""), a.has("remove")
		if v := a.str("value", ""); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, err
			}
			r.Value = f
		}
		rec = r
	case "producer-ids":
		r := metadata.NewProducerIdsRecord()
		r.BrokerId, r.BrokerEpoch, r.NextProducerId = int32(a.int("broker", -1)), a.int("epoch", -1), a.int("next", 0)
		rec = r
	case "acl":
		r := metadata.NewAccessControlEntryRecord()
		r.Id = testUUID(uint64(a.int("id", 0)))
		r.ResourceType, r.ResourceName = int8(a.int("resource-type", 2)), a.str("resource", "t")
		r.PatternType, r.Principal, r.Host = int8(a.int("pattern", 3)), a.str("principal", "User:alice"), a.str("host", "*")
		r.Operation, r.PermissionType = int8(a.int("op", 3)), int8(a.int("perm", 3))
		rec = r
	case "remove-acl":
		r := metadata.NewRemoveAccessControlEntryRecord()
		r.Id = testUUID(uint64(a.int("id", 0)))
		rec = r
	case "scram":
		r := metadata.NewUserScramCredentialRecord()
		r.Name, r.Mechanism, r.Iterations = a.str("name", ""), int8(a.int("mech", 1)), int32(a.int("iterations", 4096))
		r.Salt, r.StoredKey, r.ServerKey = []byte(a.str("salt", "salt")), []byte("stored"), []byte("server")
		rec = r
	case "remove-scram":
		r := metadata.NewRemoveUserScramCredentialRecord()
		r.Name, r.Mechanism = a.str("name", ""), int8(a.int("mech", 1))
		rec = r
	case "token":
		r := metadata.NewDelegationTokenRecord()
		r.TokenId, r.Owner, r.Requester = a.str("id", ""), a.str("owner", "User:alice"), a.str("requester", "User:alice")
		r.Renewers = []string{}
		if v := a.str("renewers", ""); v != "" {
			r.Renewers = strings.Split(v, ",")
		}
		r.IssueTimestamp, r.MaxTimestamp, r.ExpirationTimestamp = a.int("issue", 0), a.int("max", 100), a.int("expiry", 50)
		rec = r
	case "remove-token":
		r := metadata.NewRemoveDelegationTokenRecord()
		r.TokenId = a.str("id", "")
		rec = r
	default:
		return nil, fmt.Errorf("unknown record type %q", fields[0])
	}
	if a.err != nil {
		return nil, a.err
	}
	// Round-trip through the codec, as records reach the image in the
	// log.
	b, err := metadata.Encode(rec)
	if err != nil {
		return nil, err
	}
	return metadata.Decode(b)
}

// parseFeatures parses "name:min-max,..." and calls add for each.
func parseFeatures(s string, add func(string, int16, int16)) {
	if s == "" {
		return
	}
	for f := range strings.SplitSeq(s, ",") {
		name, rng, _ := strings.Cut(f, ":")
		lo, hi, _ := strings.Cut(rng, "-")
		l, _ := strconv.Atoi(lo)
		h, _ := strconv.Atoi(hi)
		add(name, int16(l), int16(h))
	}
}

func showDirs(dirs [][16]byte) string {
	var parts []string
	for _, d := range dirs {
		switch d {
		case metadata.DirectoryMigrating():
			parts = append(parts, "M")
		case [16]byte{}:
			parts = append(parts, "U")
		default:
			parts = append(parts, showUUID(d))
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// printImage prints every part of an image in a stable order.
func printImage(img *metadata.Image) string {
	var b strings.Builder
	fmt.Fprintf(&b, "offset=%d epoch=%d\n", img.Offset(), img.Epoch())
	f := img.Features()
	fmt.Fprintf(&b, "features: metadata.version=%d", f.MetadataVersion())
	for n, l := range f.Levels() {
		fmt.Fprintf(&b, " %s=%d", n, l)
	}
	if s := f.ZkMigrationState(); s != 0 {
		fmt.Fprintf(&b, " zk-migration=%d", s)
	}
	b.WriteString("\n")
	c := img.Cluster()
	for br := range c.Brokers() {
		fmt.Fprintf(&b, "broker %d epoch=%d inc=%s fenced=%t shutdown=%t", br.ID, br.Epoch, showUUID(br.IncarnationID), br.Fenced, br.InControlledShutdown)
		if br.Rack != nil {
			fmt.Fprintf(&b, " rack=%s", *br.Rack)
		}
		for _, e := range br.Endpoints {
			fmt.Fprintf(&b, " %s://%s:%d", e.Name, e.Host, e.Port)
		}
		for _, ft := range br.Features {
			fmt.Fprintf(&b, " %s:%d-%d", ft.Name, ft.Min, ft.Max)
		}
		if br.LogDirs != nil {
			fmt.Fprintf(&b, " dirs=%s", showDirs(br.LogDirs))
		}
		if br.CordonedLogDirs != nil {
			fmt.Fprintf(&b, " cordoned=%s", showDirs(br.CordonedLogDirs))
		}
		b.WriteString("\n")
	}
	for ct := range c.Controllers() {
		fmt.Fprintf(&b, "controller %d inc=%s", ct.ID, showUUID(ct.IncarnationID))
		for _, e := range ct.Endpoints {
			fmt.Fprintf(&b, " %s://%s:%d", e.Name, e.Host, e.Port)
		}
		for _, ft := range ct.Features {
			fmt.Fprintf(&b, " %s:%d-%d", ft.Name, ft.Min, ft.Max)
		}
		b.WriteString("\n")
	}
	for name, id := range img.Topics().Names() {
		t, _ := img.Topics().ByID(id)
		if t.Name != name {
			fmt.Fprintf(&b, "BROKEN INDEX: name %s maps to topic %s\n", name, t.Name)
		}
		fmt.Fprintf(&b, "topic %s id=%s\n", name, showUUID(id))
		for pid, p := range t.Partitions() {
			fmt.Fprintf(&b, "  %d: replicas=%v isr=%v leader=%d leader-epoch=%d epoch=%d dirs=%s", pid, p.Replicas(), p.ISR(), p.Leader, p.LeaderEpoch, p.PartitionEpoch, showDirs(p.Directories()))
			if p.RemovingReplicas() != nil {
				fmt.Fprintf(&b, " removing=%v", p.RemovingReplicas())
			}
			if p.AddingReplicas() != nil {
				fmt.Fprintf(&b, " adding=%v", p.AddingReplicas())
			}
			if p.ELR() != nil {
				fmt.Fprintf(&b, " elr=%v", p.ELR())
			}
			if p.LastKnownELR() != nil {
				fmt.Fprintf(&b, " last-elr=%v", p.LastKnownELR())
			}
			if p.LeaderRecoveryState != 0 {
				fmt.Fprintf(&b, " recovering")
			}
			b.WriteString("\n")
		}
	}
	for res := range img.Configs().Resources() {
		fmt.Fprintf(&b, "config %d/%q:", res.Type, res.Name)
		for k, v := range img.Configs().Resource(res) {
			fmt.Fprintf(&b, " %s=%s", k, v)
		}
		b.WriteString("\n")
	}
	for q := range img.ClientQuotas().All() {
		b.WriteString("quota")
		for _, e := range q.Entity {
			name := "<default>"
			if e.Name != nil {
				name = *e.Name
			}
			fmt.Fprintf(&b, " %s=%s", e.Type, name)
		}
		b.WriteString(":")
		for k, v := range q.Values() {
			fmt.Fprintf(&b, " %s=%v", k, v)
		}
		b.WriteString("\n")
	}
	if n := img.ProducerIDs().NextProducerID(); n >= 0 {
		fmt.Fprintf(&b, "producer-ids next=%d\n", n)
	}
	for a := range img.ACLs().All() {
		fmt.Fprintf(&b, "acl %s resource=%d:%s pattern=%d principal=%s host=%s op=%d perm=%d\n", showUUID(a.ID), a.ResourceType, a.ResourceName, a.PatternType, a.Principal, a.Host, a.Operation, a.PermissionType)
	}
	for s := range img.Scram().All() {
		fmt.Fprintf(&b, "scram %s mech=%d iterations=%d salt=%s\n", s.Name, s.Mechanism, s.Iterations, s.Salt)
	}
	for tk := range img.DelegationTokens().All() {
		fmt.Fprintf(&b, "token %s owner=%s requester=%s renewers=%v issue=%d max=%d expiry=%d\n", tk.TokenID, tk.Owner, tk.Requester, tk.Renewers, tk.IssueTimestamp, tk.MaxTimestamp, tk.ExpirationTimestamp)
	}
	return b.String()
}

// formatFields prints the fields of a record (or nested struct) other
// than Version and UnknownTags as " Name=value", dereferencing pointers
// and printing UUIDs with showUUID.
func formatFields(v reflect.Value) string {
	var b strings.Builder
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if name == "Version" || name == "UnknownTags" {
			continue
		}
		fmt.Fprintf(&b, " %s=%s", name, formatValue(v.Field(i)))
	}
	return b.String()
}

func formatValue(v reflect.Value) string {
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			return "null"
		}
		return formatValue(v.Elem())
	case v.Type() == reflect.TypeFor[[16]byte]():
		return showUUID(v.Interface().([16]byte))
	case v.Type() == reflect.TypeFor[[]byte]():
		return fmt.Sprintf("%q", v.Bytes())
	case v.Kind() == reflect.Slice:
		if v.IsNil() {
			return "null"
		}
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = formatValue(v.Index(i))
		}
		return "[" + strings.Join(parts, " ") + "]"
	case v.Kind() == reflect.Struct:
		return "{" + strings.TrimSpace(formatFields(v)) + "}"
	}
	return fmt.Sprint(v.Interface())
}
