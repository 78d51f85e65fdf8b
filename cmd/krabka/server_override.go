package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/krabka-go/krabka/internal/logstore"
	"github.com/krabka-go/krabka/raft"
)

// loadServerConfig reads the server.properties file at path as
// raft.LoadConfig does, with each KEY=VALUE of overrides (the --override
// flags of kafka-server-start) replacing the file's value of KEY or adding
// it, later overrides winning over earlier ones. An override is read as one
// more line of the file, so an unknown key gets the warning it would get
// there. An override without "=" or with an empty key is an error (Kafka
// would take "--override KEY" as KEY set to the empty string), and so is
// one with a character above U+FFFF, which the properties reader cannot
// take.
func loadServerConfig(path string, overrides []string) (raft.Config, raft.Warnings, error) {
	if len(overrides) == 0 {
		return raft.LoadConfig(path)
	}
	var extra strings.Builder
	for _, o := range overrides {
		key, value, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(key) == "" {
			return raft.Config{}, nil, fmt.Errorf("--override %q: want KEY=VALUE, e.g. --override node.id=2", o)
		}
		if strings.ContainsFunc(o, func(r rune) bool { return r > 0xffff }) {
			return raft.Config{}, nil, fmt.Errorf("--override %q: characters above U+FFFF are not supported in properties", o)
		}
		extra.WriteString(logstore.EscapeProperty(key, true) + "=" + logstore.EscapeProperty(value, false) + "\n")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return raft.Config{}, nil, fmt.Errorf("load config: %w", err)
	}
	// Two newlines end the file's last line even when it has no newline or
	// ends in a backslash that continues it.
	data = append(append(data, "\n\n"...), extra.String()...)
	return raft.ParseProperties(data)
}
