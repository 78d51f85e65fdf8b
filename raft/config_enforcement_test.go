package raft

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// What an accepted property touches.
const (
	touchesSecurity   = "security"
	touchesQuota      = "connection quota"
	touchesDurability = "durability"
	touchesOther      = "other"
)

// enforcement is how one accepted property is kept: for security,
// connection quotas and durability, the tests (package.TestName) that
// fail if the node stops enforcing it; for anything else, why it needs
// none.
type enforcement struct {
	touches string
	tests   []string
	why     string
}

// acceptedProperties classifies every property ParseProperties reads into
// a Config. A property added to propertyTable without an entry here fails
// TestAcceptedPropertiesAreEnforced, and so does one that touches
// security, connection quotas or durability without a test proving it is
// enforced.
var acceptedProperties = map[string]enforcement{
	keyListeners:                   {touchesSecurity, []string{"raft.TestStartBindsEveryControllerListener", "raft.TestStartFailsWhenASecondListenerCannotBind"}, ""},
	keyControllerListenerNames:     {touchesSecurity, []string{"raft.TestStartBindsEveryControllerListener"}, ""},
	keyListenerSecurityProtocolMap: {touchesSecurity, []string{"raft.TestValidateRefusesSecureListeners", "raft.TestStartRefusesSecureListener", "raft.TestSSLQuorumElectsAndCommits"}, ""},

	// Every TLS property is read node-wide and as listener.name.<l>.<key>.
	keySSLKeystoreType:             {touchesSecurity, []string{"raft.TestValidateSSLRules", "raft.TestSSLQuorumElectsAndCommits", "raft.TestSSLKeyAndTrustStoreTypes", "raft.TestSSLStoreReload"}, ""},
	keySSLKeystoreLocation:         {touchesSecurity, []string{"raft.TestSSLQuorumElectsAndCommits", "raft.TestSSLCertificateReload", "raft.TestValidateSSLRules", "raft.TestSSLServedChainWithOpenSSL"}, ""},
	keySSLKeystoreCertificateChain: {touchesSecurity, []string{"raft.TestSSLInlinePEMFromProperties", "raft.TestValidateSSLRules"}, ""},
	keySSLKeystoreKey:              {touchesSecurity, []string{"raft.TestSSLInlinePEMFromProperties", "raft.TestValidateSSLRules"}, ""},
	keySSLKeyPassword:              {touchesSecurity, []string{"raft.TestSSLEncryptedKey", "raft.TestSSLKeyAndTrustStoreTypes", "raft.TestSSLStoreRefusals"}, ""},
	keySSLPrincipalMappingRules:    {touchesSecurity, []string{"raft.TestSSLPrincipalMappingRules", "raft.TestPrincipalMapper"}, ""},
	keySSLKeystorePassword:         {touchesSecurity, []string{"raft.TestSSLKeyAndTrustStoreTypes", "raft.TestSSLStoreRefusals", "raft.TestValidateSSLRules"}, ""},
	keySSLTruststorePassword:       {touchesSecurity, []string{"raft.TestSSLKeyAndTrustStoreTypes", "raft.TestSSLStoreRefusals", "raft.TestValidateSSLRules"}, ""},
	keySSLTruststoreType:           {touchesSecurity, []string{"raft.TestValidateSSLRules", "raft.TestSSLListenerRefusesUntrustedClients", "raft.TestSSLKeyAndTrustStoreTypes", "raft.TestSSLStoreReload"}, ""},
	keySSLTruststoreLocation:       {touchesSecurity, []string{"raft.TestSSLListenerRefusesUntrustedClients", "raft.TestSSLTrustStoreReload", "raft.TestSSLPeerEndpointIdentification", "raft.TestValidateSSLRules"}, ""},
	keySSLTruststoreCertificates:   {touchesSecurity, []string{"raft.TestSSLInlinePEMFromProperties", "raft.TestValidateSSLRules"}, ""},
	keySSLClientAuth:               {touchesSecurity, []string{"raft.TestSSLListenerRefusesUntrustedClients", "raft.TestSSLQuorumElectsAndCommits", "raft.TestValidateSSLRules", "raft.TestValidateAcceptsSSL", "transport.TestTLSListenerClosesPlaintextAndUncertifiedClients"}, ""},
	keySSLEnabledProtocols:         {touchesSecurity, []string{"raft.TestSSLProtocolsAndCipherSuitesAreEnforced", "raft.TestSSLListenerRefusesUntrustedClients", "raft.TestValidateSSLRules"}, ""},
	keySSLProtocol:                 {touchesSecurity, []string{"raft.TestValidateSSLRules", "raft.TestValidateAcceptsSSL"}, ""},
	keySSLCipherSuites:             {touchesSecurity, []string{"raft.TestSSLProtocolsAndCipherSuitesAreEnforced", "raft.TestValidateSSLRules"}, ""},
	keySSLEndpointIdentification:   {touchesSecurity, []string{"raft.TestSSLPeerEndpointIdentification", "raft.TestValidateSSLRules", "transport.TestTLSPeerRefusesAnUntrustedServer"}, ""},

	// Every SASL property is read node-wide; sasl.enabled.mechanisms and
	// sasl.jaas.config (as <mechanism>.sasl.jaas.config) also per listener.
	keySASLEnabledMechanisms:     {touchesSecurity, []string{"raft.TestValidateSASLRules", "raft.TestSASLQuorumElectsAndCommits", "transport.TestSASLUnsupportedMechanism", "transport.TestSCRAMKgo"}, ""},
	keySASLJAASConfig:            {touchesSecurity, []string{"raft.TestSASLQuorumElectsAndCommits", "raft.TestValidateSASLRules", "raft.TestParsePlainJAAS", "transport.TestSASLPlainRefusesBadCredentials", "transport.TestSCRAMPeerAuthenticates"}, ""},
	keySASLControllerMechanism:   {touchesSecurity, []string{"raft.TestSASLQuorumElectsAndCommits", "raft.TestValidateSASLRules", "transport.TestSASLPeerAuthenticates", "transport.TestSCRAMPeerAuthenticates"}, ""},
	keySASLServerMaxReceiveSize:  {touchesSecurity, []string{"raft.TestParsePropertiesSASL", "transport.TestSASLOversizedFrame"}, ""},
	keyFailedAuthenticationDelay: {touchesSecurity, []string{"raft.TestParsePropertiesSASL", "transport.TestSASLPlainRefusesBadCredentials"}, ""},
	// connections.max.reauth.ms is also read per listener and per
	// listener and mechanism.
	keyConnectionsMaxReauth: {touchesSecurity, []string{"raft.TestReauthSettingPrecedence", "raft.TestValidateReauthRules", "raft.TestSASLQuorumReauthenticates",
		"transport.TestReauthSessionLifetime", "transport.TestReauthExpiredSessionIsClosed", "transport.TestReauthRenewsSession",
		"transport.TestReauthRefusesAnotherPrincipal", "transport.TestReauthRefusesAnotherMechanism", "transport.TestReauthPeer", "transport.TestReauthKgo"}, ""},

	keyMaxConnections:               {touchesQuota, []string{"raft.TestStartEnforcesMaxConnections", "raft.TestListenersShareConnectionQuotas", "transport.TestQuotasMaxConnectionsZeroTCP", "transport.TestServerMaxConnectionsTCP"}, ""},
	keyMaxConnectionsPerIP:          {touchesQuota, []string{"raft.TestStartEnforcesConnectionQuotas", "transport.TestQuotasPerIPZeroAdmitsOnlyOverridesTCP", "transport.TestMaxConnectionsPerIP"}, ""},
	keyMaxConnectionsPerIPOverrides: {touchesQuota, []string{"raft.TestStartEnforcesConnectionQuotas", "transport.TestQuotasPerIPOverridesTCP", "transport.TestQuotasSharedByListenersTCP"}, ""},
	keyMaxConnectionCreationRate:    {touchesQuota, []string{"raft.TestStartEnforcesConnectionCreationRate", "raft.TestConnectionCreationRateProperties", "transport.TestCreationRateDelaysAccepts", "transport.TestCreationRateZero", "transport.TestCreationRateNodeAndListener"}, ""},
	keyQuotaWindowNum:               {touchesQuota, []string{"raft.TestConnectionCreationRateProperties", "raft.TestStartEnforcesConnectionCreationRate", "raft.TestStartEnforcesIPConnectionRate", "transport.TestCreationRateWindow", "transport.TestCreationRateDelaysAccepts"}, ""},
	keyQuotaWindowSize:              {touchesQuota, []string{"raft.TestConnectionCreationRateProperties", "transport.TestCreationRateWindow"}, ""},
	keyConnectionsMaxIdle:           {touchesQuota, []string{"raft.TestStartEnforcesIdleTimeout", "transport.TestIdleConnectionExpires"}, ""},
	keySocketRequestMaxBytes:        {touchesQuota, []string{"raft.TestStartEnforcesRequestMaxBytes"}, ""},

	keyAuthorizerClassName:       {touchesSecurity, []string{"raft.TestAuthzSSLClusterOperations", "raft.TestAuthzPlaintextAllowEveryone", "raft.TestAuthzRefusalShapes", "raft.TestValidateAuthorizer", "raft.TestStartWarnsWithoutAuthorizer"}, ""},
	keySuperUsers:                {touchesSecurity, []string{"raft.TestAuthzMatchingRules", "raft.TestAuthzSSLClusterOperations", "raft.TestValidateAuthorizer"}, ""},
	keyAllowEveryoneIfNoACLFound: {touchesSecurity, []string{"raft.TestAuthzMatchingRules", "raft.TestAuthzPlaintextAllowEveryone", "raft.TestAuthzACLdControllersReplicate", "raft.TestValidateAuthorizer"}, ""},

	keyMetadataLogDir:                 {touchesDurability, []string{"raft.TestClusterFailoverAndRestart"}, ""},
	keyLogDirs:                        {touchesDurability, []string{"raft.TestLoadConfigController"}, ""},
	keyLogDir:                         {touchesDurability, []string{"raft.TestParsePropertiesEveryKey"}, ""},
	keyMaxRetentionBytes:              {touchesDurability, []string{"raft.TestRetentionBySize"}, ""},
	keyMaxRetentionTime:               {touchesDurability, []string{"raft.TestRetentionByTime", "raft.TestRetentionTimeRuleOnIdleNode"}, ""},
	keyMaxRecordBytesBetweenSnapshots: {touchesDurability, []string{"raft.TestSnapshotByteTrigger"}, ""},
	keyMaxSnapshotInterval:            {touchesDurability, []string{"raft.TestSnapshotIntervalTrigger"}, ""},

	keyNodeID:                 {touchesOther, nil, "identity, checked against meta.properties at start"},
	keyBrokerID:               {touchesOther, nil, "Kafka's older name for node.id"},
	keyLogLevel:               {touchesOther, nil, "the level of the node's log lines (raft.TestLogLevelProperty)"},
	keyProcessRoles:           {touchesOther, nil, "must be controller; nothing else runs"},
	keyAdvertisedListeners:    {touchesOther, nil, "where the other voters connect; opens nothing on this node"},
	keyQuorumVoters:           {touchesOther, nil, "the static voter set"},
	keyQuorumBootstrapServers: {touchesOther, nil, "where an observer looks for the leader"},
	keyElectionTimeout:        {touchesOther, nil, "a consensus timer"},
	keyFetchTimeout:           {touchesOther, nil, "a consensus timer"},
	keyElectionBackoffMax:     {touchesOther, nil, "a consensus timer"},
	keyRequestTimeout:         {touchesOther, nil, "a consensus timer"},
	keyRetryBackoff:           {touchesOther, nil, "a consensus timer"},
	keyAppendLinger:           {touchesOther, nil, "batching only; every write is committed with an fsync whatever its value"},
	keyAutoJoin:               {touchesOther, nil, "voter-set membership"},
	keyFetchMaxBytes:          {touchesOther, nil, "a replication batch size"},
	keyFetchSnapshotMaxBytes:  {touchesOther, nil, "a replication chunk size"},
	keySegmentBytes:           {touchesOther, nil, "the size a segment rolls at; which records are kept is the retention and snapshot settings' business"},
	keySegmentTime:            {touchesOther, nil, "the age a segment rolls at (internal/logstore TestRollBySegmentTime)"},
	keyMaxIdleInterval:        {touchesOther, nil, "how often an idle leader writes a NoOpRecord"},
	keyUnstableAPIVersions: {touchesOther, []string{"raft.TestUnstableTogglesReachTheListenersAndFeatureRows"},
		"which API versions the listeners advertise and serve; carried to every listener's decoder and ApiVersions answer"},
	keyUnstableFeatureVersions: {touchesOther, []string{"raft.TestUnstableTogglesReachTheListenersAndFeatureRows", "raft.TestCheckFeatureUpdatesRowsAndUnstableLevels"},
		"which feature levels ApiVersions advertises and UpdateFeatures and storage format accept"},
	keyInternalSegmentBytes:  {touchesOther, nil, "a test-only segment size below the 8 MiB minimum"},
	keyInternalMaxBatchBytes: {touchesOther, nil, "a test-only batch size bound"},
	keyInternalDeleteDelay:   {touchesOther, nil, "test-only; read and validated but not used: Kafka removes a deleted snapshot's file after this delay, and Krabka's snapshot store removes it once its last reader has closed it"},
}

// testFuncs returns the names of the Test functions in the _test.go files
// of dir.
func testFuncs(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s: %v", dir, err)
	}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(`)
	var names []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range decl.FindAllSubmatch(src, -1) {
			names = append(names, string(m[1]))
		}
	}
	return names
}

// TestAcceptedPropertiesAreEnforced: every property Config reads is
// classified, and each that touches security, connection quotas or
// durability names tests that exist and prove it is enforced.
func TestAcceptedPropertiesAreEnforced(t *testing.T) {
	tests := map[string][]string{
		"raft":      testFuncs(t, "."),
		"transport": testFuncs(t, filepath.Join("..", "internal", "transport")),
	}
	read := []string{keyMetadataLogDir, keyLogDirs, keyLogDir, keyBrokerID}
	for _, p := range propertyTable {
		read = append(read, p.key)
	}
	read = append(read, sslKeys...)
	read = append(read, saslKeys...)
	for _, key := range read {
		e, ok := acceptedProperties[key]
		switch {
		case !ok:
			t.Errorf("%s is read into Config but not classified in acceptedProperties", key)
		case e.touches == touchesOther && e.why == "":
			t.Errorf("%s: say why it needs no enforcement test", key)
		case e.touches != touchesOther && len(e.tests) == 0:
			t.Errorf("%s touches %s but names no test proving it is enforced", key, e.touches)
		}
		for _, name := range e.tests {
			pkg, fn, _ := strings.Cut(name, ".")
			if !slices.Contains(tests[pkg], fn) {
				t.Errorf("%s: test %s does not exist", key, name)
			}
		}
	}
	for key := range acceptedProperties {
		if !slices.Contains(read, key) {
			t.Errorf("acceptedProperties lists %s, which ParseProperties does not read", key)
		}
	}
}
