// Package toybroker is a toy Kafka broker built on Krabka's seams, to
// read as a guide to embedding the quorum in a broker of one's own. It
// serves no client traffic; it does what a broker asks of its
// controllers, the way Kafka's brokers and controllers split the work:
//
//   - the controller side ([Router], a raft.AdminRouter) answers the
//     admin APIs that Kafka's controllers answer on the controller
//     listener: BrokerRegistration (62), which it turns into a
//     RegisterBrokerRecord (the leader gives it its offset for broker
//     epoch, KIP-903), and CreateTopics (19), which it turns into a
//     TopicRecord and PartitionRecords placed on the registered brokers;
//   - the broker side ([Broker]) follows the metadata log as a KRaft
//     observer (raft.StartObserver) and keeps its own image, registers
//     through the controller listener, creates topics there and waits
//     for its own image to show them.
//
// The program cmd/toybroker runs either side as a process:
//
//	toybroker controller -dir /tmp/c -port 9093
//	toybroker broker -id 100 -dir /tmp/b -voters 1@127.0.0.1:9093 -topic orders -partitions 3
//
// and the package's test runs both and checks what the broker printed.
package toybroker
