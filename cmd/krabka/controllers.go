package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/krabka-go/krabka/internal/kraft"
	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/internal/vfs"
	"github.com/krabka-go/krabka/raft"
)

// newAddControllerCommand builds "krabka metadata-quorum add-controller",
// Kafka's kafka-metadata-quorum add-controller.
func newAddControllerCommand(a *app, o *quorumOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add-controller --command-config server.properties [--dry-run]",
		Short: "Add the controller of --command-config to a dynamic quorum",
		Long: "add-controller reads the new controller's own server.properties\n" +
			"(--command-config): its node.id, the directory.id of meta.properties in its\n" +
			"metadata log directory, and the endpoints of its controller listeners. It\n" +
			"then asks the quorum leader to add it as a voter (AddRaftVoter), reaching\n" +
			"the quorum with the client settings the same file carries\n" +
			"(security.protocol, sasl.mechanism, sasl.jaas.config and the ssl.* keys),\n" +
			"as Kafka's tool does. The new\n" +
			"controller must run, as an observer, and have caught up with the leader:\n" +
			"wait until describe --replication shows it without lag.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runAddController(cmd.Context(), a.stdout, *o)
		},
	}
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "print what would be added, change nothing")
	return cmd
}

// newRemoveControllerCommand builds "krabka metadata-quorum
// remove-controller", Kafka's kafka-metadata-quorum remove-controller.
func newRemoveControllerCommand(a *app, o *quorumOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove-controller --controller-id ID --controller-directory-id UUID [--dry-run]",
		Short: "Remove a controller from a dynamic quorum",
		Long: "remove-controller asks the quorum leader to remove the voter with this node\n" +
			"id and directory id (RemoveRaftVoter). A leader that removes itself steps\n" +
			"down once the removal commits.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runRemoveController(cmd.Context(), a.stdout, *o, cmd.Flags().Changed("controller-id"))
		},
	}
	f := cmd.Flags()
	f.Int32VarP(&o.controllerID, "controller-id", "i", -1, "the node id of the controller to remove")
	f.StringVarP(&o.controllerDirID, "controller-directory-id", "d", "", "the directory id of the controller to remove")
	f.BoolVar(&o.dryRun, "dry-run", false, "print what would be removed, change nothing")
	return cmd
}

// newController is what add-controller reads from the new controller's
// server.properties.
type newController struct {
	id        int32
	dir       kraft.UUID
	endpoints []raft.Endpoint
	// security is how the tool reaches the quorum: the client settings
	// the file carries, as Kafka's tool builds its admin client from the
	// same file.
	security raft.ClientSecurity
}

// readNewController reads node.id, the directory id, the controller
// endpoints and the client settings from the server.properties at path,
// as Kafka's tool does: an endpoint without a host is named localhost.
func readNewController(path string) (newController, error) {
	cfg, _, sec, err := raft.LoadConfigWithClient(path)
	if err != nil {
		return newController{}, fmt.Errorf("--command-config %s: %w", path, err)
	}
	if cfg.NodeID < 0 {
		return newController{}, fmt.Errorf("--command-config %s: node.id is not set", path)
	}
	mp, err := logstore.ReadMetaProperties(vfs.OS(), cfg.MetadataLogDir)
	if err != nil {
		return newController{}, fmt.Errorf("--command-config %s: read meta.properties of the metadata log directory %s (format it with krabka storage format --no-initial-controllers): %w", path, cfg.MetadataLogDir, err)
	}
	if mp.DirectoryID.IsZero() {
		return newController{}, fmt.Errorf("--command-config %s: %s/meta.properties has no directory.id", path, cfg.MetadataLogDir)
	}
	nc := newController{id: int32(cfg.NodeID), dir: mp.DirectoryID, security: sec}
	for _, ep := range cfg.AdvertisedControllerEndpoints() {
		if ep.Host == "" {
			ep.Host = "localhost"
		}
		nc.endpoints = append(nc.endpoints, ep)
	}
	if len(nc.endpoints) == 0 {
		return newController{}, fmt.Errorf("--command-config %s: no endpoint for the controller listeners %s", path, strings.Join(cfg.ControllerListenerNames, ","))
	}
	return nc, nil
}

// formatEndpoints writes endpoints as Kafka's tool prints them:
// NAME://host:port, joined with ", ".
func formatEndpoints(eps []raft.Endpoint) string {
	out := make([]string, 0, len(eps))
	for _, ep := range eps {
		out = append(out, ep.Name+"://"+net.JoinHostPort(ep.Host, strconv.Itoa(int(ep.Port))))
	}
	return strings.Join(out, ", ")
}

// runAddController is "krabka metadata-quorum add-controller".
func runAddController(ctx context.Context, stdout io.Writer, o quorumOptions) error {
	o.commandConfigServer = true
	addrs, err := o.controllers()
	if err != nil {
		return err
	}
	if o.commandConfig == "" {
		return errors.New("add-controller needs --command-config, the server.properties of the controller to add")
	}
	nc, err := readNewController(o.commandConfig)
	if err != nil {
		return err
	}
	addrs.security = nc.security
	what := fmt.Sprintf("controller %d with directory id %s and endpoints: %s", nc.id, nc.dir, formatEndpoints(nc.endpoints))
	if o.dryRun {
		_, err := fmt.Fprintf(stdout, "DRY RUN of adding %s\n", what)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, clusterID string) (err error) {
		req := kmsg.NewPtrAddRaftVoterRequest()
		if req.Version, err = leader.version(req, "AddRaftVoter", 0, 1); err != nil {
			return err
		}
		req.ClusterID = &clusterID
		req.TimeoutMillis = int32(min(o.timeout, time.Minute) / time.Millisecond)
		req.VoterID, req.VoterDirectoryID, req.AckWhenCommitted = nc.id, nc.dir, true
		for _, ep := range nc.endpoints {
			req.Listeners = append(req.Listeners, kmsg.AddRaftVoterRequestListener{Name: ep.Name, Host: ep.Host, Port: ep.Port})
		}
		resp, err := leader.request(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errRetry)
		}
		r := resp.(*kmsg.AddRaftVoterResponse)
		return answerError("AddRaftVoter", leader.addr, r.ErrorCode, r.ErrorMessage)
	})
	if err != nil {
		return fmt.Errorf("add %s: %w%s", what, err, staticQuorumHint(err, o.bootstrapControllers))
	}
	_, err = fmt.Fprintf(stdout, "Added %s\n", what)
	return err
}

// runRemoveController is "krabka metadata-quorum remove-controller".
func runRemoveController(ctx context.Context, stdout io.Writer, o quorumOptions, idSet bool) error {
	addrs, err := o.controllers()
	if err != nil {
		return err
	}
	switch {
	case !idSet:
		return errors.New("remove-controller needs --controller-id")
	case o.controllerID < 0:
		return fmt.Errorf("--controller-id %d: must be at least 0", o.controllerID)
	case o.controllerDirID == "":
		return errors.New("remove-controller needs --controller-directory-id")
	}
	dir, err := kraft.ParseUUID(o.controllerDirID)
	if err != nil || dir.IsZero() {
		return fmt.Errorf("--controller-directory-id %q: not a directory id (22 base64url characters)", o.controllerDirID)
	}
	// Kafka's tool prints two spaces after "removing" and "Removed".
	what := fmt.Sprintf(" KRaft controller %d with directory id %s", o.controllerID, dir)
	if o.dryRun {
		_, err := fmt.Fprintf(stdout, "DRY RUN of removing %s\n", what)
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	err = withLeader(ctx, addrs, func(ctx context.Context, leader *controllerConn, clusterID string) (err error) {
		req := kmsg.NewPtrRemoveRaftVoterRequest()
		if req.Version, err = leader.version(req, "RemoveRaftVoter", 0, 0); err != nil {
			return err
		}
		req.ClusterID = &clusterID
		req.VoterID, req.VoterDirectoryID = o.controllerID, dir
		resp, err := leader.request(ctx, req)
		if err != nil {
			return fmt.Errorf("%w: %w", err, errRetry)
		}
		r := resp.(*kmsg.RemoveRaftVoterResponse)
		return answerError("RemoveRaftVoter", leader.addr, r.ErrorCode, r.ErrorMessage)
	})
	if err != nil {
		return fmt.Errorf("remove%s: %w%s", what, err, staticQuorumHint(err, o.bootstrapControllers))
	}
	_, err = fmt.Fprintf(stdout, "Removed %s\n", what)
	return err
}

// staticQuorumHint is what follows the error of an AddRaftVoter or
// RemoveRaftVoter answered with UNSUPPORTED_VERSION, which is how a leader
// at kraft.version 0 (a static quorum) refuses it: the command that makes
// the quorum dynamic. Any other error gets nothing.
func staticQuorumHint(err error, bootstrap string) string {
	if !errors.Is(err, kerr.UnsupportedVersion) {
		return ""
	}
	return "; the quorum is static (kraft.version 0, controller.quorum.voters): make it dynamic first with " +
		"krabka features --bootstrap-controller " + bootstrap + " upgrade --feature kraft.version=1 " +
		"(docs/operations.md, \"Upgrade a static quorum to a dynamic one\")"
}
