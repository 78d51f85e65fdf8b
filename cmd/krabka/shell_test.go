package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/krabka-go/krabka/internal/sharedtest"
	"github.com/krabka-go/krabka/metadata"
)

// runKrabkaStdin runs args in-process with stdin as input.
func runKrabkaStdin(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	code := 0
	if err := root.Execute(); err != nil {
		code = 1
		errOut.WriteString(exitError(err) + "\n")
	}
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

// shellSession is the interactive session the golden files record: every
// command, with globs, several paths, relative paths and errors.
const shellSession = `ls
ls /image /local
ls /image/features /image/provenance
cat /image/provenance
cat /image/features/*
cd /image/cluster
pwd
ls ..
tree brokers controllers
cd ../topics/byName
ls
find /image/topics/byName/__consumer_offsets
cat */0
cd
cat /image/producerIds/nextProducerId
find /image/configs
tree /image/configs/{BROKER,TOPIC:__consumer_offsets}
ls /image/scram /image/acls /image/clientQuotas /image/delegationToken
cat /image/nope
ls /image/nope
tree /image/nope
find /image/nope
cd /image/nope
cd /image/provenance
cat /image/topics
ls /image/{topics
ls /image/-x
ls -l
frob
l
c
man ls
man frob
man
history 3
history x
help
exit
ls /never/reached
`

func TestMetadataShellKafkaSamples(t *testing.T) {
	root := sharedtest.Dir(t, "kafka-samples")
	for _, tc := range []struct{ golden, flag, path string }{
		{"shell-kafka42-snapshot.txt", "--snapshot", "kafka42-single-static/__cluster_metadata-0/00000000000000012666-0000000003.checkpoint"},
		{"shell-kafka42-directory.txt", "--directory", "kafka42-single-static"},
		{"shell-kafka41-snapshot.txt", "--snapshot", "kafka41-dynamic-bootstrap-nolog/__cluster_metadata-0/00000000000000007206-0000000001.checkpoint"},
		{"shell-kafka39-directory.txt", "--directory", "kafka39-single-logstart/__cluster_metadata-0"},
		{"shell-kafka37-segment.txt", "--snapshot", "kafka37-single-static/__cluster_metadata-0/00000000000000000000.log"},
		{"shell-kafka35-directory.txt", "--directory", "kafka35-3node-static/kafka1"},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := runKrabkaStdin(t, shellSession, "metadata-shell", tc.flag, filepath.Join(root, tc.path))
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			checkGolden(t, tc.golden, r.stdout)
			if strings.Contains(r.stdout, "/never/reached") {
				t.Error("a command after exit ran")
			}
		})
	}
}

func TestMetadataShellOneShot(t *testing.T) {
	snap := filepath.Join(sharedtest.Dir(t, "kafka-samples"), "kafka42-single-static/__cluster_metadata-0/00000000000000012666-0000000003.checkpoint")
	r := mustSucceed(t, "metadata-shell", "--snapshot", snap, "ls", "/image/topics/byName")
	if r.stdout != "__consumer_offsets\nstreaming-events\n" {
		t.Errorf("ls printed %q", r.stdout)
	}
	r = mustSucceed(t, "metadata-shell", "-s", snap, "cat", "/local/commitId", "/local/version")
	if want := buildCommit() + "\n" + buildVersion() + "\n"; r.stdout != want {
		t.Errorf("cat /local printed %q, want %q", r.stdout, want)
	}
	// A flag after the command word belongs to the command.
	r = runKrabka(t, "metadata-shell", "-s", snap, "ls", "-l")
	if r.code != 1 || r.stdout != "unrecognized arguments: '-l'\n" {
		t.Errorf("ls -l: exit %d, stdout %q", r.code, r.stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cat", "/image/nope"}, "cat: /image/nope: No such file or directory.\n"},
		{[]string{"frob"}, "invalid choice: 'frob' (choose from 'cat', 'find', 'ls', 'tree')\n"},
		// Shell-only commands are not offered in a one-shot run, as in Kafka.
		{[]string{"pwd"}, "invalid choice: 'pwd' (choose from 'cat', 'find', 'ls', 'tree')\n"},
		{[]string{"ls", "/image/{a,{b}}"}, "ls: bad glob \"{a,{b}}\": can't nest glob groups\n"},
	} {
		r := runKrabka(t, append([]string{"metadata-shell", "-s", snap}, tc.args...)...)
		if r.code != 1 || r.stdout != tc.want {
			t.Errorf("%v: exit %d, stdout %q, want 1 and %q", tc.args, r.code, r.stdout, tc.want)
		}
	}
}

// TestMetadataShellReadsACopy reads a snapshot under another name, as
// snapshot save writes one: the same tree, at the file's own offsets.
func TestMetadataShellReadsACopy(t *testing.T) {
	snap := filepath.Join(sharedtest.Dir(t, "kafka-samples"), "kafka42-single-static/__cluster_metadata-0/00000000000000012666-0000000003.checkpoint")
	data, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(t.TempDir(), "backup.checkpoint")
	if err := os.WriteFile(cp, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want := mustSucceed(t, "metadata-shell", "--snapshot", snap, "tree", "/image/topics", "/image/configs", "/image/cluster", "/image/features").stdout
	if got := mustSucceed(t, "metadata-shell", "--snapshot", cp, "tree", "/image/topics", "/image/configs", "/image/cluster", "/image/features").stdout; got != want {
		t.Errorf("the copy reads differently:\n%s\nwant:\n%s", got, want)
	}
}

func TestMetadataShellBadInput(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "x.bin")
	if err := os.WriteFile(other, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "exactly one of --snapshot, --directory and --bootstrap-controller", "metadata-shell", "ls")
	mustFail(t, "exactly one of", "metadata-shell", "--snapshot", other, "--directory", dir, "ls")
	mustFail(t, "want a snapshot (<offset>-<epoch>.checkpoint, a copy of one, bootstrap.checkpoint) or a log segment (<offset>.log), and its record batches do not read: batch at byte 0", "metadata-shell", "--snapshot", other, "ls")
	empty := filepath.Join(dir, "empty.checkpoint")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	mustFail(t, "do not read: empty file", "metadata-shell", "--snapshot", empty, "ls")
	mustFail(t, "no such file or directory", "metadata-shell", "--snapshot", filepath.Join(dir, "missing.checkpoint"), "ls")
	mustFail(t, "not a metadata log directory", "metadata-shell", "--directory", dir, "ls")
	mustFail(t, "--bootstrap-controller \"nohost\"", "metadata-shell", "--bootstrap-controller", "nohost", "ls")
}

// TestMetadataShellHonoursLock checks that a directory whose lock a node
// holds is refused, as Kafka's shell refuses it, and that an unlocked
// directory with a lock file is read.
func TestMetadataShellHonoursLock(t *testing.T) {
	n, _ := newFormattedVoter(t)
	cfgDir := n.meta
	c := launchNode(t, n.props)
	mustFail(t, "unable to lock", "metadata-shell", "--directory", cfgDir, "ls")
	// The leader writes the bootstrap records to the log when it starts.
	if _, err := c.ReadImage(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := mustSucceed(t, "metadata-shell", "--directory", cfgDir, "cat", "/image/features/metadataVersion")
	if r.stdout != metadataVersionName(latestMetadataVersion)+"\n" {
		t.Errorf("metadataVersion %q", r.stdout)
	}
}

func TestSensitiveConfig(t *testing.T) {
	for key, want := range map[string]bool{
		"ssl.keystore.password":                            true,
		"listener.name.ctl.ssl.key.password":               true,
		"sasl.jaas.config":                                 true,
		"listener.name.ctl.scram-sha-256.sasl.jaas.config": true,
		"ssl.keystore.key":                                 true,
		"delegation.token.secret.key":                      true,
		"password.encoder.secret":                          true,
		"cleanup.policy":                                   false,
		"min.insync.replicas":                              false,
		"ssl.keystore.location":                            false,
	} {
		if got := sensitiveConfig(key); got != want {
			t.Errorf("sensitiveConfig(%q) = %t, want %t", key, got, want)
		}
	}
}

// TestShellRedaction checks that SCRAM credentials, delegation tokens and
// password configs print as [redacted] unless redaction is off.
func TestShellRedaction(t *testing.T) {
	d := metadata.NewDelta(metadata.EmptyImage())
	recs := []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.FeatureMetadataVersion, FeatureLevel: latestMetadataVersion},
		&metadata.UserScramCredentialRecord{Name: "alice", Mechanism: metadata.ScramSHA256, Salt: []byte{1, 2}, StoredKey: []byte{3}, ServerKey: []byte{4}, Iterations: 4096},
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "", Name: "ssl.keystore.password", Value: ptr("hunter2")},
		&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: ptr("1000")},
		&metadata.DelegationTokenRecord{TokenId: "tok", Owner: "User:alice", Requester: "User:alice", Renewers: []string{"User:bob"}, IssueTimestamp: 1, MaxTimestamp: 3, ExpirationTimestamp: 2},
	}
	for i, r := range recs {
		if err := d.Replay(r, int64(i), 1); err != nil {
			t.Fatalf("replay %T: %v", r, err)
		}
	}
	root := shellRoot(shellImage{img: d.Apply()})
	for _, redacted := range []bool{true, false} {
		st := newShellState(root, false)
		st.redacted = redacted
		var w strings.Builder
		st.run(&w, parseShellCommand([]string{"cat", "/image/scram/SCRAM-SHA-256/alice", "/image/configs/BROKER/*", "/image/delegationToken/tok"}, false))
		want := "ScramCredentialData(salt=[redacted], storedKey=[redacted], serverKey=[redacted], iterations=[redacted])\n" +
			"1000\n[redacted]\n" +
			"DelegationTokenDatatokenId=[redacted](owner=[redacted](tokenRequester=[redacted](renewers=[redacted], issueTimestamp=[redacted], maxTimestamp=[redacted]), expiryTimestamp=[redacted]\n"
		if !redacted {
			want = "ScramCredentialData(salt=0102, storedKey=03, serverKey=04, iterations=4096)\n" +
				"1000\nhunter2\n" +
				"DelegationTokenDatatokenId=tok(owner=User:alice(tokenRequester=User:alice(renewers=User:bob, issueTimestamp=1, maxTimestamp=3), expiryTimestamp=2\n"
		}
		if w.String() != want {
			t.Errorf("redacted=%t:\n%s\nwant:\n%s", redacted, w.String(), want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestGlobComponent(t *testing.T) {
	for _, tc := range []struct {
		glob    string
		literal bool
		match   []string
		nomatch []string
		err     string
	}{
		{glob: "abc", literal: true},
		{glob: "a?c", match: []string{"abc", "a.c"}, nomatch: []string{"ac", "abbc"}},
		{glob: "*.log", match: []string{"x.log", ".log"}, nomatch: []string{"xlog"}},
		{glob: "{foo,bar}", match: []string{"foo", "bar"}, nomatch: []string{"foobar", "baz"}},
		// As in Kafka, an escape alone leaves the component literal.
		{glob: `\*x`, literal: true},
		{glob: `\*x*`, match: []string{"*x", "*xy"}, nomatch: []string{"ax"}},
		{glob: "a(b)*", match: []string{"a(b)", "a(b)c"}, nomatch: []string{"ab"}},
		{glob: "{a,{b}}", err: "can't nest glob groups"},
		{glob: "{a,b", err: "unterminated glob group"},
	} {
		g, err := parseGlobComponent(tc.glob)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("parseGlobComponent(%q) = %v, want error %q", tc.glob, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("parseGlobComponent(%q): %v", tc.glob, err)
		}
		if (g.re == nil) != tc.literal {
			t.Errorf("parseGlobComponent(%q) literal = %t, want %t", tc.glob, g.re == nil, tc.literal)
		}
		for _, m := range tc.match {
			if !g.re.MatchString(m) {
				t.Errorf("%q does not match %q", tc.glob, m)
			}
		}
		for _, m := range tc.nomatch {
			if g.re.MatchString(m) {
				t.Errorf("%q matches %q", tc.glob, m)
			}
		}
	}
}

func TestSplitShellLine(t *testing.T) {
	for _, tc := range []struct {
		line string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"  ls   /a  ", []string{"ls", "/a"}, false},
		{`cat "a b" 'c d'`, []string{"cat", "a b", "c d"}, false},
		{`cat a\ b`, []string{"cat", "a b"}, false},
		{`cat 'a\b'`, []string{"cat", `a\b`}, false},
		{`cat ""`, []string{"cat", ""}, false},
		{`cat "a`, nil, true},
		{`cat a\`, nil, true},
	} {
		got, err := splitShellLine(tc.line)
		if (err != nil) != tc.err || strings.Join(got, "|") != strings.Join(tc.want, "|") || len(got) != len(tc.want) {
			t.Errorf("splitShellLine(%q) = %q, %v; want %q, error %t", tc.line, got, err, tc.want, tc.err)
		}
	}
}

func TestJavaFormats(t *testing.T) {
	for v, want := range map[float64]string{1: "1.0", 1.5: "1.5", 1e7: "1.0E7", 1024000: "1024000.0", 0.0001: "1.0E-4", 0: "0.0"} {
		if got := javaDouble(v); got != want {
			t.Errorf("javaDouble(%v) = %q, want %q", v, got, want)
		}
	}
	for ms, want := range map[int64]string{0: "1970-01-01T00:00:00Z[UTC]", 1775321433274: "2026-04-04T16:50:33.274Z[UTC]", 1775321433000: "2026-04-04T16:50:33Z[UTC]"} {
		if got := javaZonedTime(ms); got != want {
			t.Errorf("javaZonedTime(%d) = %q, want %q", ms, got, want)
		}
	}
	name := quotaEntityName([]metadata.QuotaEntityPart{{Type: metadata.QuotaEntityUser, Name: ptr("a(b)")}, {Type: metadata.QuotaEntityClientID, Name: ptr(`c\`)}})
	if name != `clientId(c\\)_user(a\(b\))` {
		t.Errorf("quotaEntityName = %q", name)
	}
}

func FuzzShellCommandLine(f *testing.F) {
	for _, s := range strings.Split(shellSession, "\n") {
		f.Add(s)
	}
	f.Add(`cat "a b" '*' \{x`)
	img := metadata.EmptyImage()
	f.Fuzz(func(t *testing.T, line string) {
		words, err := splitShellLine(line)
		if err != nil {
			return
		}
		for _, interactive := range []bool{true, false} {
			c := parseShellCommand(words, interactive)
			if (c.typ == nil) == (c.err == "") && len(words) > 0 && strings.Join(words, "") != "" {
				t.Fatalf("parseShellCommand(%q) = %+v: want a command or an error", words, c)
			}
			st := newShellState(shellRoot(shellImage{img: img}), interactive)
			var w strings.Builder
			st.run(&w, c)
			if c.err != "" && !st.failed {
				t.Fatalf("%q: an error that does not fail the run", words)
			}
		}
	})
}

// TestShellQuotasAndACLs checks the directories no Kafka sample holds:
// client quotas by entity and ACLs by id, as Kafka prints them.
func TestShellQuotasAndACLs(t *testing.T) {
	d := metadata.NewDelta(metadata.EmptyImage())
	acl := metadata.NewAccessControlEntryRecord()
	acl.Id = [16]byte{15: 7}
	acl.ResourceType, acl.ResourceName, acl.PatternType, acl.Principal, acl.Host, acl.Operation, acl.PermissionType = 2, "orders", 3, "User:alice", "*", 3, 3
	quota := metadata.NewClientQuotaRecord()
	quota.Entity = []metadata.ClientQuotaRecordEntityData{{EntityType: "user", EntityName: ptr("alice")}, {EntityType: "client-id", EntityName: ptr("app(1)")}}
	quota.Key, quota.Value = "producer_byte_rate", 1024
	for i, r := range []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.FeatureMetadataVersion, FeatureLevel: latestMetadataVersion},
		acl, quota,
	} {
		if err := d.Replay(r, int64(i), 1); err != nil {
			t.Fatalf("replay %T: %v", r, err)
		}
	}
	st := newShellState(shellRoot(shellImage{img: d.Apply()}), false)
	var w strings.Builder
	st.run(&w, parseShellCommand([]string{"find", "/image/clientQuotas", "/image/acls"}, false))
	st.run(&w, parseShellCommand([]string{"cat", "/image/clientQuotas/*/producer_byte_rate", "/image/acls/*"}, false))
	want := "/image/clientQuotas\n" +
		`/image/clientQuotas/clientId(app\(1\))_user(alice)` + "\n" +
		`/image/clientQuotas/clientId(app\(1\))_user(alice)/producer_byte_rate` + "\n" +
		"/image/acls\n/image/acls/AAAAAAAAAAAAAAAAAAAABw\n" +
		"1024.0\n" +
		"StandardAcl(resourceType=TOPIC, resourceName=orders, patternType=LITERAL, principal=User:alice, host=*, operation=READ, permissionType=ALLOW)\n"
	if w.String() != want || st.failed {
		t.Errorf("got:\n%s\nwant:\n%s", w.String(), want)
	}
}

// TestLsColumns checks ls's layout against the cases of Kafka's
// LsCommandHandlerTest.
func TestLsColumns(t *testing.T) {
	for _, tc := range []struct {
		width     int
		entries   []string
		widths    []int
		perColumn int
	}{
		{0, []string{"abc", "def", "ghi"}, []int{0}, 3},
		{80, []string{"a", "abcdef", "beta"}, []int{3, 8, 6}, 1},
		{18, []string{"alphabet", "beta", "gamma", "theta", "zeta"}, []int{10, 7}, 3},
	} {
		widths, per := lsColumns(tc.width, tc.entries)
		if !slices.Equal(widths, tc.widths) || per != tc.perColumn {
			t.Errorf("lsColumns(%d, %q) = %v, %d; want %v, %d", tc.width, tc.entries, widths, per, tc.widths, tc.perColumn)
		}
	}
	st := &shellState{width: 18}
	var w strings.Builder
	st.printEntries(&w, "", []string{"alphabet", "beta", "gamma", "theta", "zeta"})
	// Kafka pads every column but the last, the short last line too (its
	// test trims the output's end).
	if want := "alphabet  theta\nbeta      zeta\ngamma     \n"; w.String() != want {
		t.Errorf("printEntries:\n%q\nwant\n%q", w.String(), want)
	}

	// Files first, then each directory under its name; an empty directory
	// listed first still takes the first heading, as in Kafka.
	files := map[string]func() *shellNode{}
	for _, n := range []string{"foo", "foobarbaz", "quux"} {
		files[n] = func() *shellNode { return leaf(n) }
	}
	sub := fixedDir(map[string]func() *shellNode{"capability": nil, "delegation": nil, "elephant": nil, "fungible": nil, "green": nil})
	root := fixedDir(map[string]func() *shellNode{
		"f":     func() *shellNode { return fixedDir(files) },
		"empty": func() *shellNode { return fixedDir(nil) },
		"other": func() *shellNode { return sub },
	})
	st = &shellState{root: root, cwd: "/", width: 18}
	w.Reset()
	st.ls(&w, []string{"/f/foo", "/f/foobarbaz", "/f/quux", "/empty", "/other"})
	want := "foo        quux\nfoobarbaz  \n\nother:\ncapability\ndelegation\nelephant\nfungible\ngreen\n"
	if w.String() != want {
		t.Errorf("ls:\n%q\nwant\n%q", w.String(), want)
	}
	w.Reset()
	st.ls(&w, []string{"/empty", "/other"})
	if want := "\nother:\ncapability\ndelegation\nelephant\nfungible\ngreen\n"; w.String() != want {
		t.Errorf("ls of an empty directory first:\n%q\nwant\n%q", w.String(), want)
	}
}
