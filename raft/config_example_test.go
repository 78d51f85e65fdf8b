package raft_test

import (
	"fmt"

	"github.com/krabka-go/krabka/raft"
)

func ExampleParseProperties() {
	file := []byte(`
process.roles=controller
node.id=1
listeners=CONTROLLER://:9093
controller.listener.names=CONTROLLER
controller.quorum.voters=1@controller-1:9093,2@controller-2:9093,3@[2001:db8::3]:9093
log.dirs=/var/lib/kafka/metadata
num.network.threads=3
`)
	cfg, warnings, err := raft.ParseProperties(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range warnings {
		fmt.Println("warning:", w)
	}
	fmt.Println("node", cfg.NodeID, "in", cfg.MetadataLogDir)
	for _, v := range cfg.QuorumVoters {
		fmt.Println("voter", v.ID, "at", v.Address())
	}
	// Output:
	// warning: num.network.threads: not used by a Krabka controller; ignored
	// node 1 in /var/lib/kafka/metadata
	// voter 1 at controller-1:9093
	// voter 2 at controller-2:9093
	// voter 3 at [2001:db8::3]:9093
}

func ExampleConfig_Validate() {
	cfg := raft.ForTests(1, "/tmp/krabka-example")
	cfg.ProcessRoles = []raft.ProcessRole{raft.BrokerRole, raft.ControllerRole}
	cfg.SegmentBytes = 1 << 20
	fmt.Println(cfg.Validate())
	// Output:
	// raft: process.roles="broker,controller": Krabka runs controllers only; combined broker and controller mode is not supported, so set process.roles=controller and run the broker as a separate Kafka node
	// raft: metadata.log.segment.bytes="1048576": must be at least 8388608
}
