package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const (
	otherClusterID = "J8aAPcfLQt2bqs1JT_rMgQ"
	dirIDMeta      = "K4WGSctTSGGjZPak68seiQ"
	dirIDData1     = "3Db5QLSqSZieL3rJBUUegA"
	dirIDData2     = "OiosDok6tmN__4GVEcpQ1w"
)

// writeMetaText writes dir/meta.properties with the given lines, creating
// dir.
func writeMetaText(t *testing.T, dir string, lines ...string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "#\n#Tue Dec 01 12:00:00 UTC 2026\n" + strings.Join(lines, "\n") + "\n"
	writeFile(t, filepath.Join(dir, "meta.properties"), []byte(text))
}

// formatByHand gives the three directories of n the meta.properties of
// node 1 of testClusterID, each with its own directory id.
func formatByHand(t *testing.T, n testNode) {
	t.Helper()
	for dir, id := range map[string]string{n.meta: dirIDMeta, n.data1: dirIDData1, n.data2: dirIDData2} {
		writeMetaText(t, dir, "cluster.id="+testClusterID, "directory.id="+id, "node.id=1", "version=1")
	}
}

func TestStorageInfoGolden(t *testing.T) {
	for _, tc := range []struct {
		name  string
		code  int
		setup func(t *testing.T, n testNode)
	}{
		{"clean", 0, func(t *testing.T, n testNode) {}},
		{"missing", 1, func(t *testing.T, n testNode) {
			if err := os.RemoveAll(n.data2); err != nil {
				t.Fatal(err)
			}
		}},
		{"unformatted", 1, func(t *testing.T, n testNode) {
			if err := os.Remove(filepath.Join(n.data1, "meta.properties")); err != nil {
				t.Fatal(err)
			}
		}},
		{"not-a-directory", 1, func(t *testing.T, n testNode) {
			if err := os.RemoveAll(n.data2); err != nil {
				t.Fatal(err)
			}
			writeFile(t, n.data2, []byte("a file"))
		}},
		{"other-cluster", 1, func(t *testing.T, n testNode) {
			writeMetaText(t, n.meta, "cluster.id="+otherClusterID, "directory.id="+dirIDMeta, "node.id=1", "version=1")
		}},
		{"other-node", 1, func(t *testing.T, n testNode) {
			writeMetaText(t, n.data2, "cluster.id="+testClusterID, "directory.id="+dirIDData2, "node.id=2", "version=1")
		}},
		{"legacy", 1, func(t *testing.T, n testNode) {
			for _, d := range []string{n.meta, n.data1, n.data2} {
				writeMetaText(t, d, "version=0", "broker.id=1", "cluster.id="+testClusterID)
			}
		}},
		{"unreadable", 1, func(t *testing.T, n testNode) {
			writeMetaText(t, n.data2, "cluster.id="+testClusterID, "node.id=1", "version=x")
			writeMetaText(t, n.meta, "cluster.id="+testClusterID, "directory.id=short", "node.id=1", "version=1")
		}},
		{"everything-wrong", 1, func(t *testing.T, n testNode) {
			writeMetaText(t, n.data1, "cluster.id="+testClusterID, "node.id=1", "version=1")
			if err := os.Remove(filepath.Join(n.data2, "meta.properties")); err != nil {
				t.Fatal(err)
			}
			writeMetaText(t, n.meta, "cluster.id="+otherClusterID, "node.id=3", "version=1")
			writeFile(t, filepath.Join(n.root, "server.properties"), []byte(strings.Join([]string{
				"process.roles=controller", "node.id=1", "controller.listener.names=CONTROLLER",
				"listeners=CONTROLLER://:9093", staticVoters, "metadata.log.dir=" + n.meta,
				"log.dirs=" + n.data2 + "," + n.data1 + "," + filepath.Join(n.root, "gone"),
			}, "\n")+"\n"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newTestNode(t, 1, staticVoters)
			formatByHand(t, n)
			tc.setup(t, n)
			r := runKrabka(t, "storage", "info", "-c", n.props)
			if r.code != tc.code || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q; want exit %d and nothing on stderr", r.code, r.stderr, tc.code)
			}
			checkGolden(t, "storage-info-"+tc.name+".txt", strings.ReplaceAll(r.stdout, n.root, "ROOT"))
		})
	}
}

// TestStorageInfoKafkaSamples checks directories Kafka wrote: every sample
// on its own is clean (including 3.5's meta.properties without
// directory.id and 4.1's textual cluster id), and the samples of two
// nodes, or of two clusters, together are not.
func TestStorageInfoKafkaSamples(t *testing.T) {
	samples := samplesDir(t)
	for _, tc := range []struct {
		name string
		code int
		dirs []string
	}{
		{"kafka35-node1", 0, []string{"kafka35-3node-static/kafka1"}},
		{"kafka37", 0, []string{"kafka37-single-static"}},
		{"kafka39", 0, []string{"kafka39-single-logstart"}},
		{"kafka41", 0, []string{"kafka41-dynamic-bootstrap-nolog"}},
		{"kafka42", 0, []string{"kafka42-single-static"}},
		{"kafka35-three-nodes", 1, []string{"kafka35-3node-static/kafka1", "kafka35-3node-static/kafka2", "kafka35-3node-static/kafka3"}},
		{"two-clusters", 1, []string{"kafka42-single-static", "kafka39-single-logstart"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dirs []string
			for _, d := range tc.dirs {
				dirs = append(dirs, filepath.Join(samples, d))
			}
			props := filepath.Join(t.TempDir(), "server.properties")
			lines := []string{"process.roles=controller", "node.id=1", "controller.listener.names=CONTROLLER",
				"listeners=CONTROLLER://:9093", staticVoters, "metadata.log.dir=" + dirs[0]}
			if len(dirs) > 1 {
				lines = append(lines, "log.dirs="+strings.Join(dirs[1:], ","))
			}
			writeFile(t, props, []byte(strings.Join(lines, "\n")+"\n"))
			r := runKrabka(t, "storage", "info", "-c", props)
			if r.code != tc.code || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q; want exit %d and nothing on stderr", r.code, r.stderr, tc.code)
			}
			checkGolden(t, "storage-info-sample-"+tc.name+".txt", relative(r.stdout, samples))
		})
	}
}

func TestStorageInfoAfterFormat(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	mustSucceed(t, "storage", "format", "-t", testClusterID, "-c", n.props)
	r := mustSucceed(t, "storage", "info", "-c", n.props)
	want := "Found log directories:\n  " + n.data1 + "\n  " + n.data2 + "\n  " + n.meta + "\n\n" +
		"Found metadata: {cluster.id=" + testClusterID + ", directory.id=" + readMeta(t, n.data1).DirectoryID.String() + ", node.id=1, version=1}\n\n"
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
}

// TestStorageInfoLegacyConfig: a file without process.roles describes a
// ZooKeeper-era node, and info says the KRaft directories do not fit it.
func TestStorageInfoLegacyConfig(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	formatByHand(t, n)
	writeFile(t, n.props, []byte("broker.id=1\nlog.dirs="+n.data1+"\nmetadata.log.dir="+n.meta+"\n"))
	r := runKrabka(t, "storage", "info", "-c", n.props)
	if r.code != 1 || !strings.HasSuffix(r.stdout, "Found problem:\n  The kafka configuration file appears to be for a legacy cluster, but the directories are formatted for a cluster in KRaft mode.\n\n") {
		t.Errorf("exit %d, stdout:\n%s", r.code, r.stdout)
	}
}

func TestStorageInfoErrors(t *testing.T) {
	n := newTestNode(t, 1, staticVoters)
	mustFail(t, `required flag(s) "config" not set`, "storage", "info")
	mustFail(t, "missing.properties", "storage", "info", "-c", filepath.Join(n.root, "missing.properties"))
	// A meta.properties that cannot be read at all stops the command, as
	// Kafka's does.
	if err := os.MkdirAll(filepath.Join(n.meta, "meta.properties"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "read "+filepath.Join(n.meta, "meta.properties"), "storage", "info", "-c", n.props)
}

func TestParseRawMetaProperties(t *testing.T) {
	for _, tc := range []struct {
		text, want, err string
	}{
		{"version=1\nnode.id=4\ncluster.id=abc\n", "{cluster.id=abc, node.id=4, version=1}", ""},
		{"broker.id=2\n", "{broker.id=2, version=0}", ""},
		{"version=0\n", "{version=0}", ""},
		{"version= 1 \nnode.id=1\ncluster.id=c\n", "{cluster.id=c, node.id=1, version=1}", ""},
		{"version=2\n", "", "Unknown meta.properties version number 2"},
		{"version=one\n", "", "Invalid meta.properties version string 'one'"},
		{"version=1\ncluster.id=c\n", "", "Failed to find node.id"},
		{"version=1\nnode.id=x\ncluster.id=c\n", "", "Unable to read node.id as a base-10 number."},
		{"version=0\nbroker.id=x\n", "", "Unable to read broker.id as a base-10 number."},
		{"version=1\nnode.id=1\n", "", "cluster.id was not found."},
		{"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=AAAAAAAAAAAAAAAAAAAAAAAAAAAA\n", "", "Unable to read directory.id as a Uuid: Input string with prefix `AAAAAAAAAAAAAAAAAAAAAAAA` is too long to be decoded as a base64 UUID"},
		{"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=AAAA\n", "", "Unable to read directory.id as a Uuid: Input string `AAAA` decoded as 3 bytes, which is not equal to the expected 16 bytes of a base64-encoded UUID"},
		{"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=AAAAAAAAAAAAAAAAAAAAA*\n", "", "Unable to read directory.id as a Uuid: Input string `AAAAAAAAAAAAAAAAAAAAA*` is not URL-safe base64"},
		{"version=1\nnode.id=1\ncluster.id=c\ndirectory.id=K4WGSctTSGGjZPak68seiQ==\n", "{cluster.id=c, directory.id=K4WGSctTSGGjZPak68seiQ==, node.id=1, version=1}", ""},
	} {
		mp, err := parseRawMetaProperties([]byte(tc.text))
		switch {
		case tc.err != "" && (err == nil || err.Error() != tc.err):
			t.Errorf("%q: error %v, want %q", tc.text, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.text, err)
		case tc.err == "" && mp.String() != tc.want:
			t.Errorf("%q: %s, want %s", tc.text, mp, tc.want)
		}
	}
}
