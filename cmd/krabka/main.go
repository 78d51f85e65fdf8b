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
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// exitError formats err as the single line a failing command prints.
// Joined errors (a configuration file with several problems) are listed
// on that line separated by "; ".
func exitError(err error) string {
	msg := strings.Join(strings.FieldsFunc(err.Error(), func(r rune) bool { return r == '\n' }), "; ")
	return "Error: " + msg
}
