// Command toybroker runs one side of package toybroker as a process: a
// one-node controller quorum that serves the broker's admin APIs, or a
// broker that follows it as an observer, registers, creates a topic and
// prints what its own image then holds.
//
//	toybroker controller -dir DIR -port PORT
//	toybroker broker -id ID -dir DIR -voters 1@HOST:PORT -topic NAME -partitions N
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/krabka-go/krabka/examples/toybroker"
	"github.com/krabka-go/krabka/raft"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: toybroker controller|broker [flags]")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "controller":
		err = controller(ctx, os.Args[2:])
	case "broker":
		err = broker(ctx, os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "toybroker:", err)
		os.Exit(1)
	}
}

// controller runs node 1, the only voter, with the toy broker's router
// on its controller listener, until it is signalled.
func controller(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("controller", flag.ExitOnError)
	dir := fs.String("dir", "", "metadata log directory")
	port := fs.Int("port", 9093, "controller listener port on 127.0.0.1")
	_ = fs.Parse(args)
	cfg, _, err := raft.ParseProperties(fmt.Appendf(nil, `process.roles=controller
node.id=1
controller.listener.names=CONTROLLER
listeners=CONTROLLER://127.0.0.1:%d
controller.quorum.voters=1@127.0.0.1:%d
metadata.log.dir=%s
`, *port, *port, *dir))
	if err != nil {
		return err
	}
	cfg.AdminRouter = toybroker.Router{}
	c, err := raft.Start(ctx, cfg)
	if err != nil {
		return err
	}
	fmt.Println("controller listening on", c.Addr())
	// An unformatted directory has no bootstrap records: the first change
	// of the cluster sets metadata.version, as krabka storage format's
	// bootstrap.checkpoint would.
	if err := toybroker.Bootstrap(ctx, c); err != nil && ctx.Err() == nil {
		return err
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.Shutdown(sctx)
}

// broker follows the quorum of -voters as observer -id, registers,
// creates -topic and prints the registration and the topic as its own
// image holds them.
func broker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("broker", flag.ExitOnError)
	id := fs.Int("id", 100, "broker id (node.id), outside the voter set")
	dir := fs.String("dir", "", "metadata log directory of the observer")
	votersFlag := fs.String("voters", "", "controller.quorum.voters: ID@HOST:PORT,...")
	topic := fs.String("topic", "orders", "topic to create")
	partitions := fs.Int("partitions", 3, "partitions of the topic")
	listener := fs.String("listener", "127.0.0.1:9092", "the PLAINTEXT listener the broker registers")
	_ = fs.Parse(args)
	voters, err := parseVoters(*votersFlag)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	b, err := toybroker.StartBroker(ctx, int32(*id), *dir, voters)
	if err != nil {
		return err
	}
	defer b.Close(context.Background())
	if err := b.Register(ctx, *listener); err != nil {
		return err
	}
	fmt.Printf("registered broker %d with broker epoch %d\n", *id, b.Epoch)
	t, err := b.CreateTopic(ctx, *topic, int32(*partitions))
	if err != nil {
		return err
	}
	p0, ok := t.Partition(0)
	if !ok {
		return fmt.Errorf("topic %s has no partition 0", t.Name)
	}
	fmt.Printf("topic %s has %d partitions; partition 0 is led by broker %d\n", t.Name, t.NumPartitions(), p0.Leader)
	return nil
}

// parseVoters reads controller.quorum.voters' ID@HOST:PORT list.
func parseVoters(s string) ([]raft.QuorumVoter, error) {
	var voters []raft.QuorumVoter
	for _, v := range strings.Split(s, ",") {
		idPart, addr, ok := strings.Cut(v, "@")
		host, port, err := net.SplitHostPort(addr)
		if !ok || err != nil {
			return nil, fmt.Errorf("-voters: %q is not ID@HOST:PORT", v)
		}
		id, err1 := strconv.Atoi(idPart)
		p, err2 := strconv.Atoi(port)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("-voters: %q is not ID@HOST:PORT", v)
		}
		voters = append(voters, raft.QuorumVoter{ID: raft.NodeID(id), Host: host, Port: uint16(p)})
	}
	return voters, nil
}
