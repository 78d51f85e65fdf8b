// Command krabka runs and administers a Krabka KRaft metadata quorum. Its
// subcommands mirror Kafka's own tools, so that operators can keep their
// runbooks:
//
//	krabka storage random-uuid        kafka-storage.sh random-uuid
//	krabka storage format ...         kafka-storage.sh format
//	krabka dump-log --files ...       kafka-dump-log.sh
//	krabka dump-snapshot FILE         a checkpoint's header, voters and records
//
// Output meant for scripts goes to stdout in Kafka's layout; diagnostics go
// to stderr through log/slog (--log-format text or json). A failing command
// prints one line, "Error: <reason>", on stderr and exits with status 1, as
// Kafka's tools do.
package main

import (
	"fmt"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError formats err as the single line a failing command prints.
func exitError(err error) string {
	return fmt.Sprintf("Error: %v", err)
}
