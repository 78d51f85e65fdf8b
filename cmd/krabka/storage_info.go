package main

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/magiconair/properties"
	"github.com/spf13/cobra"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/raft"
)

// problemsFound is returned by a command that printed its findings on
// stdout and must exit with status code without an "Error:" line, as
// kafka-storage info exits 1 after listing its problems.
type problemsFound struct{ code int }

func (e *problemsFound) Error() string { return "exit status " + strconv.Itoa(e.code) }

// newInfoCommand builds "krabka storage info".
func newInfoCommand(a *app) *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "info -c server.properties",
		Short: "Check the log directories of a node: present, formatted, one cluster and node (kafka-storage info)",
		Long: "info checks metadata.log.dir and every entry of log.dirs (log.dir when\n" +
			"log.dirs is absent) as kafka-storage info does: each must exist, be a\n" +
			"directory and hold a meta.properties, all of the same cluster and node, in\n" +
			"the KRaft form (version 1). It prints the directories found, the first\n" +
			"meta.properties and the problems, and exits 1 when there is a problem.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runInfo(a, config)
		},
	}
	cmd.Flags().StringVarP(&config, "config", "c", "", "the server.properties file of the node (required)")
	_ = cmd.MarkFlagRequired("config")
	return cmd
}

// runInfo is "krabka storage info". Of the properties file it uses only
// the directories and process.roles, so a file with other problems can
// still be checked; a file that cannot be read is an error.
func runInfo(a *app, path string) error {
	cfg, warnings, err := raft.LoadConfig(path)
	var ce *raft.ConfigError
	if err != nil && !errors.As(err, &ce) {
		return fmt.Errorf("config %s: %w", path, err)
	}
	for _, w := range warnings {
		a.log.Debug("property not used", "file", path, "warning", w.String())
	}
	dirs, err := logDirectories(path, cfg)
	if err != nil {
		return fmt.Errorf("config %s: %w", path, err)
	}
	r, err := checkLogDirectories(dirs, len(cfg.ProcessRoles) > 0)
	if err != nil {
		return err
	}
	if err := r.print(a.stdout); err != nil {
		return err
	}
	if len(r.problems) > 0 {
		return &problemsFound{code: 1}
	}
	return nil
}

// infoReport is what kafka-storage info finds in a node's directories.
type infoReport struct {
	found    []string
	first    *rawMetaProperties
	problems []string
}

// checkLogDirectories checks dirs in order as Kafka's StorageTool.infoCommand
// does: every directory must exist and hold a meta.properties that agrees with
// the first one found on cluster.id and node.id, and in KRaft mode that first
// one must not be the legacy version 0. A meta.properties that cannot be
// opened (not one that does not parse) is an error, as in Kafka.
func checkLogDirectories(dirs []string, kraftMode bool) (infoReport, error) {
	var r infoReport
	for _, d := range dirs {
		fi, err := os.Stat(d)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			r.problems = append(r.problems, d+" does not exist")
			continue
		case err != nil:
			return r, fmt.Errorf("check log directory %s: %w", d, err)
		case !fi.IsDir():
			r.problems = append(r.problems, d+" is not a directory")
			continue
		}
		r.found = append(r.found, d)
		metaPath := filepath.Join(d, logstore.MetaPropertiesFileName)
		data, err := os.ReadFile(metaPath)
		if errors.Is(err, fs.ErrNotExist) {
			r.problems = append(r.problems, d+" is not formatted.")
			continue
		}
		if err != nil {
			return r, fmt.Errorf("read %s: %w", metaPath, err)
		}
		mp, err := parseRawMetaProperties(data)
		switch {
		case err != nil:
			r.problems = append(r.problems, "Error loading "+metaPath+": "+err.Error())
		case r.first == nil:
			r.first = &mp
		case r.first.clusterID != mp.clusterID:
			r.problems = append(r.problems, "Mismatched cluster IDs between storage directories.")
		case r.first.nodeID != mp.nodeID:
			r.problems = append(r.problems, "Mismatched node IDs between storage directories.")
		}
	}
	if r.first != nil {
		switch {
		case kraftMode && r.first.version == 0:
			r.problems = append(r.problems, "The kafka configuration file appears to be for a cluster in KRaft mode, but the directories are formatted for legacy mode.")
		case !kraftMode && r.first.version == 1:
			r.problems = append(r.problems, "The kafka configuration file appears to be for a legacy cluster, but the directories are formatted for a cluster in KRaft mode.")
		}
	}
	return r, nil
}

// print writes the report in kafka-storage info's layout.
func (r infoReport) print(w io.Writer) error {
	var b strings.Builder
	if len(r.found) > 0 {
		b.WriteString(plural(len(r.found), "Found log directory:", "Found log directories:") + "\n")
		for _, d := range r.found {
			b.WriteString("  " + d + "\n")
		}
		b.WriteString("\n")
	}
	if r.first != nil {
		b.WriteString("Found metadata: " + r.first.String() + "\n\n")
	}
	if len(r.problems) > 0 {
		b.WriteString(plural(len(r.problems), "Found problem:", "Found problems:") + "\n")
		for _, p := range r.problems {
			b.WriteString("  " + p + "\n")
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// rawMetaProperties is meta.properties as Kafka's MetaProperties.Builder
// reads it for kafka-storage info: looser than logstore.ParseMetaProperties,
// which the runtime uses, so that info can describe any directory Kafka
// would describe (a version 0 file without broker.id, a cluster.id of any
// form).
type rawMetaProperties struct {
	version int
	// clusterID and nodeID are "" when absent (version 0 only).
	clusterID, nodeID string
	// directoryID is "" when absent.
	directoryID string
}

// parseRawMetaProperties reads meta.properties as MetaProperties.Builder
// does, with its messages: version defaults to 0 and must be 0 or 1;
// version 0 takes broker.id, version 1 requires node.id and cluster.id;
// ids are base-10 integers; directory.id, when present, is a Uuid.
func parseRawMetaProperties(data []byte) (rawMetaProperties, error) {
	loader := properties.Loader{Encoding: properties.ISO_8859_1, DisableExpansion: true}
	p, err := loader.LoadBytes(data)
	if err != nil {
		return rawMetaProperties{}, err
	}
	var mp rawMetaProperties
	vs := p.GetString("version", "0")
	v, err := strconv.ParseInt(strings.TrimSpace(vs), 10, 32)
	if err != nil {
		//lint:ignore ST1005 Kafka's exact message
		return mp, fmt.Errorf("Invalid meta.properties version string '%s'", vs)
	}
	if v != 0 && v != 1 {
		//lint:ignore ST1005 Kafka's exact message
		return mp, fmt.Errorf("Unknown meta.properties version number %d", v)
	}
	mp.version = int(v)
	idKey := "node.id"
	if mp.version == 0 {
		idKey = "broker.id"
	}
	if s, ok := p.Get(idKey); ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			//lint:ignore ST1005 Kafka's exact message
			return mp, fmt.Errorf("Unable to read %s as a base-10 number.", idKey)
		}
		mp.nodeID = strconv.FormatInt(n, 10)
	} else if mp.version == 1 {
		//lint:ignore ST1005 Kafka's exact message
		return mp, fmt.Errorf("Failed to find %s", idKey)
	}
	mp.clusterID, _ = p.Get("cluster.id")
	if s, ok := p.Get("directory.id"); ok {
		if err := checkKafkaUUID(s); err != nil {
			//lint:ignore ST1005 Kafka's exact message
			return mp, fmt.Errorf("Unable to read directory.id as a Uuid: %w", err)
		}
		mp.directoryID = s
	}
	if _, ok := p.Get("cluster.id"); !ok && mp.version == 1 {
		//lint:ignore ST1005 Kafka's exact message
		return mp, errors.New("cluster.id was not found.")
	}
	return mp, nil
}

// checkKafkaUUID checks s as Kafka's Uuid.fromString does: at most 24
// characters of URL-safe base64 (padding optional) decoding to 16 bytes.
func checkKafkaUUID(s string) error {
	if len(s) > 24 {
		//lint:ignore ST1005 Kafka's exact message
		return fmt.Errorf("Input string with prefix `%s` is too long to be decoded as a base64 UUID", s[:24])
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
	if err != nil {
		//lint:ignore ST1005 Kafka's exact message
		return fmt.Errorf("Input string `%s` is not URL-safe base64", s)
	}
	if len(b) != 16 {
		//lint:ignore ST1005 Kafka's exact message
		return fmt.Errorf("Input string `%s` decoded as %d bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID", s, len(b))
	}
	return nil
}

// String renders the properties as Kafka prints them after "Found
// metadata:": Java's TreeMap form of MetaProperties.toProperties, keys
// sorted.
func (mp rawMetaProperties) String() string {
	var kv []string
	if mp.version == 0 && mp.nodeID != "" {
		kv = append(kv, "broker.id="+mp.nodeID)
	}
	if mp.clusterID != "" {
		kv = append(kv, "cluster.id="+mp.clusterID)
	}
	if mp.directoryID != "" {
		kv = append(kv, "directory.id="+mp.directoryID)
	}
	if mp.version == 1 {
		kv = append(kv, "node.id="+mp.nodeID)
	}
	kv = append(kv, "version="+strconv.Itoa(mp.version))
	return "{" + strings.Join(kv, ", ") + "}"
}
