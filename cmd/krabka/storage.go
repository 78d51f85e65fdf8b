package main

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/magiconair/properties"
	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/control"
	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/snapshot"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/metadata"
	"github.com/krabka-go/krabka/raft"
)

// metadataPartitionDir is the directory of the metadata log inside the
// metadata log directory.
const metadataPartitionDir = "__cluster_metadata-0"

// newStorageCommand builds "krabka storage", Kafka's kafka-storage tool.
func newStorageCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "storage",
		Short: "Format and inspect storage directories (kafka-storage)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("storage needs a subcommand: random-uuid, format, info, log-end, restore or unsafe-force-standalone")
		},
	}
	cmd.AddCommand(newRandomUUIDCommand(a), newFormatCommand(a), newInfoCommand(a), newLogEndCommand(a), newRestoreCommand(a), newForceStandaloneCommand(a))
	return cmd
}

// newRandomUUIDCommand builds "krabka storage random-uuid".
func newRandomUUIDCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "random-uuid",
		Short: "Print a random Kafka Uuid, for a cluster id or a directory id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := randomUUID()
			if err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, u)
			return err
		},
	}
}

// randomUUID returns a random Kafka Uuid as Kafka's Uuid.randomUuid draws
// it: a version 4 random UUID, drawn again while it is reserved (the zero
// Uuid, or Uuid(0, 1), the metadata topic id) or while its text starts
// with "-", so that it is never mistaken for a command-line flag.
func randomUUID() (kraft.UUID, error) {
	for {
		var u kraft.UUID
		if _, err := rand.Read(u[:]); err != nil {
			return u, fmt.Errorf("random uuid: %w", err)
		}
		u[6] = u[6]&0x0f | 0x40 // version 4
		u[8] = u[8]&0x3f | 0x80 // IETF variant
		if u.IsZero() || u == logstore.MetadataTopicID || strings.HasPrefix(u.String(), "-") {
			continue
		}
		return u, nil
	}
}

// parseClusterID checks a --cluster-id value as Kafka's Uuid.fromString
// does: the base64url text of 16 bytes, 22 characters, or 24 with "=="
// padding. The zero Uuid and Uuid(0, 1) are reserved and refused. The
// value is written to meta.properties exactly as given.
func parseClusterID(s string) error {
	if s == "" {
		return errors.New("the cluster id is empty; generate one with: krabka storage random-uuid")
	}
	text := s
	if len(s) == 24 && strings.HasSuffix(s, "==") {
		text = s[:22]
	}
	u, err := kraft.ParseUUID(text)
	if err != nil {
		return fmt.Errorf("cluster id %q is not a valid Kafka Uuid (22 base64url characters encoding 16 bytes); generate one with: krabka storage random-uuid", s)
	}
	if u.IsZero() || u == logstore.MetadataTopicID {
		return fmt.Errorf("cluster id %q is a reserved Uuid", s)
	}
	return nil
}

// formatOptions are the flags of "krabka storage format".
type formatOptions struct {
	clusterID            string
	config               string
	releaseVersion       string
	features             []string
	ignoreFormatted      bool
	standalone           bool
	initialControllers   string
	noInitialControllers bool
	addScram             []string
	// fsys holds the log directories; nil is the operating system's.
	fsys vfs.FS
}

// newFormatCommand builds "krabka storage format".
func newFormatCommand(a *app) *cobra.Command {
	var o formatOptions
	cmd := &cobra.Command{
		Use:   "format -t CLUSTER_ID -c server.properties",
		Short: "Write meta.properties and the bootstrap files into every log directory",
		Long: "format prepares the log directories of a node (metadata.log.dir and log.dirs)\n" +
			"as kafka-storage format does: bootstrap.checkpoint with the feature levels,\n" +
			"for a dynamic quorum with initial voters the 0-0 bootstrap snapshot, and\n" +
			"then meta.properties. A directory that already holds meta.properties is\n" +
			"refused unless --ignore-formatted is given.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runFormat(a, o, time.Now())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.clusterID, "cluster-id", "t", "", "the cluster id (required), a Kafka Uuid such as krabka storage random-uuid prints")
	f.StringVarP(&o.config, "config", "c", "", "the server.properties file of the node (required)")
	f.StringVarP(&o.releaseVersion, "release-version", "r", "", "the release to set metadata.version and the default feature levels for, e.g. 3.9 or 4.3-IV0 (default: the newest, "+metadataVersions[latestMetadataVersion]+")")
	f.StringArrayVarP(&o.features, "feature", "f", nil, "a feature level NAME=LEVEL, e.g. group.version=1 (repeatable)")
	f.BoolVarP(&o.ignoreFormatted, "ignore-formatted", "g", false, "skip directories that are already formatted instead of failing")
	f.BoolVarP(&o.standalone, "standalone", "s", false, "start a dynamic quorum with this node as its only voter")
	f.StringVarP(&o.initialControllers, "initial-controllers", "I", "", "start a dynamic quorum with these voters: ID@HOST:PORT:DIRECTORY_ID,...")
	f.BoolVarP(&o.noInitialControllers, "no-initial-controllers", "N", false, "format a node that will join an existing dynamic quorum")
	f.StringArrayVarP(&o.addScram, "add-scram", "S", nil, "a SCRAM credential for the bootstrap records, e.g. 'SCRAM-SHA-256=[name=alice,password=alice-secret]' (repeatable)")
	_ = cmd.MarkFlagRequired("cluster-id")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// initialVoter is one entry of --initial-controllers.
type initialVoter struct {
	id          int32
	host        string
	port        uint16
	directoryID kraft.UUID
}

// parseInitialControllers reads Kafka's --initial-controllers syntax:
// comma-separated ID@HOST:PORT:DIRECTORY_ID entries, IPv6 hosts in
// brackets (DynamicVoter.parse).
func parseInitialControllers(s string) ([]initialVoter, error) {
	var out []initialVoter
	for entry := range strings.SplitSeq(s, ",") {
		v, err := parseInitialVoter(strings.TrimSpace(entry))
		if err != nil {
			return nil, fmt.Errorf("--initial-controllers: %w", err)
		}
		for _, o := range out {
			if o.id == v.id {
				return nil, fmt.Errorf("--initial-controllers: node id %d is listed twice", v.id)
			}
			if o.directoryID == v.directoryID {
				return nil, fmt.Errorf("--initial-controllers: directory id %s is listed twice", v.directoryID)
			}
		}
		out = append(out, v)
	}
	return out, nil
}

// parseInitialVoter reads one ID@HOST:PORT:DIRECTORY_ID entry.
func parseInitialVoter(s string) (initialVoter, error) {
	var v initialVoter
	idText, rest, ok := strings.Cut(s, "@")
	if !ok {
		return v, fmt.Errorf("entry %q: want ID@HOST:PORT:DIRECTORY_ID", s)
	}
	id, err := strconv.ParseInt(idText, 10, 32)
	if err != nil || id < 0 {
		return v, fmt.Errorf("entry %q: node id %q is not a non-negative integer", s, idText)
	}
	v.id = int32(id)
	if strings.HasPrefix(rest, "[") {
		end := strings.Index(rest, "]")
		if end < 0 {
			return v, fmt.Errorf("entry %q: IPv6 host without closing bracket", s)
		}
		v.host, rest = rest[1:end], rest[end+1:]
		if !strings.HasPrefix(rest, ":") {
			return v, fmt.Errorf("entry %q: want a port after the host", s)
		}
		rest = rest[1:]
	} else {
		v.host, rest, ok = strings.Cut(rest, ":")
		if !ok {
			return v, fmt.Errorf("entry %q: want ID@HOST:PORT:DIRECTORY_ID", s)
		}
	}
	if v.host == "" {
		return v, fmt.Errorf("entry %q: empty host", s)
	}
	portText, dirText, ok := strings.Cut(rest, ":")
	if !ok {
		return v, fmt.Errorf("entry %q: want ID@HOST:PORT:DIRECTORY_ID", s)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil || port == 0 {
		return v, fmt.Errorf("entry %q: port %q is not a number from 1 to 65535", s, portText)
	}
	v.port = uint16(port)
	v.directoryID, err = kraft.ParseUUID(dirText)
	if err != nil {
		return v, fmt.Errorf("entry %q: directory id %q is not a Kafka Uuid (22 base64url characters)", s, dirText)
	}
	if v.directoryID.IsZero() || v.directoryID == logstore.MetadataTopicID {
		return v, fmt.Errorf("entry %q: directory id %s is reserved", s, dirText)
	}
	return v, nil
}

// standaloneVoter returns the voter --standalone describes: this node, at
// the host and port of its first controller listener as advertised (the
// listener itself when not advertised; localhost when the host is empty),
// with a fresh directory id.
func standaloneVoter(cfg raft.Config) (initialVoter, error) {
	if len(cfg.ControllerListenerNames) == 0 {
		return initialVoter{}, errors.New("--standalone: controller.listener.names is empty")
	}
	name := strings.ToUpper(cfg.ControllerListenerNames[0])
	var ep *raft.Endpoint
	for _, list := range [][]raft.Endpoint{cfg.AdvertisedListeners, cfg.Listeners} {
		for i := range list {
			if strings.EqualFold(list[i].Name, name) {
				ep = &list[i]
				break
			}
		}
		if ep != nil {
			break
		}
	}
	if ep == nil {
		return initialVoter{}, fmt.Errorf("--standalone: no listener named %s in listeners or advertised.listeners", name)
	}
	if ep.Port == 0 {
		return initialVoter{}, fmt.Errorf("--standalone: listener %s has port 0; give it a fixed port", name)
	}
	dir, err := randomUUID()
	if err != nil {
		return initialVoter{}, err
	}
	host := ep.Host
	if host == "" {
		host = "localhost"
	}
	return initialVoter{id: int32(cfg.NodeID), host: host, port: ep.Port, directoryID: dir}, nil
}

// featureRecords returns the bootstrap records of bootstrap.checkpoint:
// FeatureLevelRecord metadata.version first, then every other feature with a
// level above 0 sorted by name; kraft.version is never written (Kafka's
// BootstrapMetadata.fromVersions). It also returns the metadata.version level
// and the kraft.version that --feature asked for (-1 when not given).
// Levels past a feature's latest production one are refused unless
// unstable (unstable.feature.versions.enable), and every level must have
// the levels it depends on (Kafka's Formatter and Feature.validateVersion).
func featureRecords(release string, flags []string, unstable bool) (values [][]byte, mv, kraftVersion int16, err error) {
	mv, kraftVersion = latestMetadataVersion, -1
	if release != "" {
		if mv, err = parseReleaseVersion(release, unstable); err != nil {
			return nil, 0, 0, fmt.Errorf("--release-version: %w", err)
		}
	}
	_, maxMV := knownFeatures.MetadataVersions(unstable)
	levels := map[string]int16{}
	for _, f := range flags {
		name, levelText, ok := strings.Cut(f, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, 0, 0, fmt.Errorf("--feature %q: want NAME=LEVEL", f)
		}
		level, perr := strconv.ParseInt(strings.TrimSpace(levelText), 10, 16)
		if perr != nil || level < 0 {
			return nil, 0, 0, fmt.Errorf("--feature %q: level %q is not a non-negative integer", f, levelText)
		}
		if _, dup := levels[name]; dup {
			return nil, 0, 0, fmt.Errorf("--feature %s is given more than once", name)
		}
		spec, known := knownFeatures.Lookup(name)
		switch {
		case name == featureMetadataVersion:
			if release != "" {
				return nil, 0, 0, errors.New("--release-version and --feature metadata.version cannot be used together")
			}
			if int16(level) < minMetadataVersion || int16(level) > maxMV {
				return nil, 0, 0, fmt.Errorf("--feature metadata.version=%d: supported levels are %d (%s) to %d (%s)%s",
					level, minMetadataVersion, metadataVersionName(minMetadataVersion), maxMV, metadataVersionName(maxMV), unstableHint(int16(level), maxMV, knownFeatures.LatestMetadataVersion))
			}
			mv = int16(level)
		case !known:
			return nil, 0, 0, fmt.Errorf("--feature %s: unknown feature; supported features are %s", name, strings.Join(featureNames(), ", "))
		case int16(level) > spec.MaxLevel(unstable):
			return nil, 0, 0, fmt.Errorf("--feature %s=%d: supported levels are %d to %d%s", name, level, spec.MinLevel(), spec.MaxLevel(unstable), unstableHint(int16(level), spec.MaxLevel(unstable), spec.MaxLevel(true)))
		case name == featureKRaftVersion:
			kraftVersion = int16(level)
		}
		levels[name] = int16(level)
	}
	final := map[string]int16{featureMetadataVersion: mv}
	for _, f := range knownFeatures.Features {
		level, ok := levels[f.Name]
		if !ok {
			level = f.DefaultLevel(mv)
		}
		final[f.Name] = level
	}
	for _, f := range knownFeatures.Features {
		if _, asked := levels[f.Name]; !asked && f.Name == featureKRaftVersion {
			continue // decided by the quorum mode, later
		}
		if err := knownFeatures.CheckLevel(f.Name, final[f.Name], final, unstable); err != nil {
			return nil, 0, 0, fmt.Errorf("--feature: %w", err)
		}
	}
	rec := metadata.NewFeatureLevelRecord()
	rec.Name, rec.FeatureLevel = featureMetadataVersion, mv
	b, err := metadata.Encode(rec)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("encode %s: %w", featureMetadataVersion, err)
	}
	values = append(values, b)
	for _, f := range knownFeatures.Features {
		n, level := f.Name, final[f.Name]
		if level == 0 || n == featureKRaftVersion {
			continue
		}
		rec := metadata.NewFeatureLevelRecord()
		rec.Name, rec.FeatureLevel = n, level
		b, err := metadata.Encode(rec)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("encode %s: %w", n, err)
		}
		values = append(values, b)
	}
	return values, mv, kraftVersion, nil
}

// unstableHint tells how to reach level when it is past the supported
// maximum but not past the newest known level: it is an unstable level
// and unstable.feature.versions.enable is off.
func unstableHint(level, supported, newest int16) string {
	if level > supported && level <= newest {
		return " (a level past the latest production one needs unstable.feature.versions.enable=true)"
	}
	return ""
}

// logDirectories returns the directories to format: metadata.log.dir and
// every entry of log.dirs (log.dir when log.dirs is absent), without
// duplicates, sorted.
func logDirectories(path string, cfg raft.Config) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	loader := properties.Loader{Encoding: properties.ISO_8859_1, DisableExpansion: true}
	p, err := loader.LoadBytes(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	dirs := []string{cfg.MetadataLogDir}
	list, ok := p.Get("log.dirs")
	if !ok {
		list, ok = p.Get("log.dir")
	}
	if ok {
		for d := range strings.SplitSeq(list, ",") {
			if d = strings.TrimSpace(d); d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	for i, d := range dirs {
		if d == "" {
			return nil, errors.New("metadata.log.dir is empty")
		}
		dirs[i] = filepath.Clean(d)
	}
	slices.Sort(dirs)
	return slices.Compact(dirs), nil
}

// runFormat is "krabka storage format".
func runFormat(a *app, o formatOptions, now time.Time) error {
	if err := parseClusterID(o.clusterID); err != nil {
		return err
	}
	cfg, warnings, err := raft.LoadConfig(o.config)
	if err != nil {
		return fmt.Errorf("config %s: %w", o.config, err)
	}
	for _, w := range warnings {
		a.log.Debug("property not used", "file", o.config, "warning", w.String())
	}
	if len(cfg.ProcessRoles) == 0 {
		return fmt.Errorf("config %s: process.roles is empty: the kafka configuration file appears to be for a legacy cluster; KRaft needs process.roles", o.config)
	}
	if !slices.Contains(cfg.ProcessRoles, raft.ControllerRole) {
		return fmt.Errorf("config %s: process.roles must include controller", o.config)
	}
	if cfg.NodeID < 0 {
		return fmt.Errorf("config %s: node.id is not set", o.config)
	}
	modes := 0
	for _, set := range []bool{o.standalone, o.initialControllers != "", o.noInitialControllers} {
		if set {
			modes++
		}
	}
	if modes > 1 {
		return errors.New("--standalone, --initial-controllers and --no-initial-controllers cannot be used together")
	}
	dynamic := len(cfg.QuorumVoters) == 0
	if !dynamic && modes > 0 {
		return errors.New("--standalone, --initial-controllers and --no-initial-controllers are for a dynamic quorum, but controller.quorum.voters is set (a static quorum)")
	}
	if dynamic && modes == 0 {
		//lint:ignore ST1005 Kafka's exact message, which operators search for
		return errors.New("Because controller.quorum.voters is not set on this controller, you must specify one of the following: --standalone, --initial-controllers, or --no-initial-controllers.")
	}
	values, mv, kraftVersion, err := featureRecords(o.releaseVersion, o.features, cfg.UnstableFeatureVersions)
	if err != nil {
		return err
	}
	scramValues, err := scramRecords(o.addScram, mv)
	if err != nil {
		return err
	}
	values = append(values, scramValues...)
	switch {
	case kraftVersion == 0 && dynamic:
		return errors.New("--feature kraft.version=0 cannot be used with a dynamic quorum (controller.quorum.voters is empty); it needs kraft.version 1")
	case kraftVersion == 1 && !dynamic:
		return errors.New("--feature kraft.version=1 needs a dynamic quorum: remove controller.quorum.voters and use --standalone, --initial-controllers or --no-initial-controllers")
	}
	var voters []initialVoter
	switch {
	case o.standalone:
		v, err := standaloneVoter(cfg)
		if err != nil {
			return err
		}
		voters = []initialVoter{v}
	case o.initialControllers != "":
		if voters, err = parseInitialControllers(o.initialControllers); err != nil {
			return err
		}
	}
	if len(voters) > 0 && len(cfg.ControllerListenerNames) == 0 {
		return fmt.Errorf("config %s: controller.listener.names is empty; the initial voters need a listener name", o.config)
	}
	dirs, err := logDirectories(o.config, cfg)
	if err != nil {
		return fmt.Errorf("config %s: %w", o.config, err)
	}
	fsys := o.fsys
	if fsys == nil {
		fsys = vfs.OS()
	}
	var todo []string
	for _, d := range dirs {
		_, err := fsys.Stat(filepath.Join(d, logstore.MetaPropertiesFileName))
		switch {
		case err == nil && o.ignoreFormatted:
			continue
		case err == nil:
			//lint:ignore ST1005 Kafka's exact message, which scripts match
			return fmt.Errorf("Log directory %s is already formatted. Use --ignore-formatted to ignore this directory and format the others.", d)
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("check log directory %s: %w", d, err)
		}
		todo = append(todo, d)
	}
	if len(todo) == 0 {
		_, err := fmt.Fprintln(a.stdout, "All of the log directories are already formatted.")
		return err
	}
	metadataDir := filepath.Clean(cfg.MetadataLogDir)
	for _, d := range todo {
		dirID, err := randomUUID()
		if err != nil {
			return err
		}
		kind := "data directory"
		writeSnapshot := false
		if d == metadataDir {
			kind = "metadata directory"
			if len(voters) > 0 {
				kind, writeSnapshot = "dynamic metadata directory", true
				for _, v := range voters {
					if v.id == int32(cfg.NodeID) {
						kind, dirID = "dynamic metadata voter directory", v.directoryID
					}
				}
			}
		}
		if _, err := fmt.Fprintf(a.stdout, "Formatting %s %s with metadata.version %s.\n", kind, d, metadataVersionName(mv)); err != nil {
			return err
		}
		if err := logstore.MkdirAllDurable(fsys, d); err != nil {
			return fmt.Errorf("create log directory %s: %w", d, err)
		}
		if err := snapshot.WriteBootstrapCheckpoint(fsys, d, now.UnixMilli(), values); err != nil {
			return fmt.Errorf("write bootstrap.checkpoint in %s: %w", d, err)
		}
		if writeSnapshot {
			if err := writeBootstrapSnapshot(fsys, d, now, cfg.ControllerListenerNames[0], voters); err != nil {
				return err
			}
		}
		mp := logstore.MetaProperties{Version: 1, ClusterID: o.clusterID, NodeID: kraft.NodeID(cfg.NodeID), DirectoryID: dirID}
		if err := logstore.WriteMetaProperties(fsys, d, mp, now); err != nil {
			return fmt.Errorf("write meta.properties in %s: %w", d, err)
		}
		a.log.Debug("formatted log directory", "dir", d, "directory.id", dirID.String())
	}
	return nil
}

// writeBootstrapSnapshot writes the 0-0 bootstrap snapshot of a dynamic
// quorum into dir/__cluster_metadata-0: kraft.version 1 and the initial
// voters, each with one endpoint named after the first controller
// listener and the supported kraft.version range 0..1.
func writeBootstrapSnapshot(fsys vfs.FS, dir string, now time.Time, listener string, voters []initialVoter) error {
	rec := &control.VotersRecord{}
	for _, v := range voters {
		rec.Voters = append(rec.Voters, control.VotersRecordVoter{
			VoterId:          v.id,
			VoterDirectoryId: v.directoryID,
			Endpoints: []control.VotersRecordEndpoint{{
				Name: strings.ToUpper(listener), Host: v.host, Port: v.port,
			}},
			KRaftVersionFeature: control.VotersRecordKRaftVersionFeature{MinSupportedVersion: 0, MaxSupportedVersion: 1},
		})
	}
	part := filepath.Join(dir, metadataPartitionDir)
	if err := logstore.MkdirAllDurable(fsys, part); err != nil {
		return fmt.Errorf("create %s: %w", part, err)
	}
	// meta.properties is missing (the directory counts as unformatted), so
	// a bootstrap snapshot already here was left by a format that stopped
	// before its end; it is replaced, as Kafka's atomic move replaces it.
	leftover := filepath.Join(part, snapshot.FileName(snapshot.Bootstrap))
	if err := fsys.Remove(leftover); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replace the bootstrap snapshot of an interrupted format: %w", err)
	}
	var unique [8]byte
	if _, err := rand.Read(unique[:]); err != nil {
		return fmt.Errorf("write bootstrap snapshot in %s: %w", part, err)
	}
	if err := snapshot.WriteBootstrapSnapshot(fsys, part, binary.BigEndian.Uint64(unique[:]), now.UnixMilli(), rec); err != nil {
		return fmt.Errorf("write bootstrap snapshot in %s: %w", part, err)
	}
	return nil
}
