// Command krabkagen generates Go codecs from message definition files.
//
// Usage (from a go:generate line in the package that owns the output):
//
//	krabkagen -pkg metadata -defs definitions -out .
//
// It parses every *.def file in -defs (see package
// github.com/krabka-go/krabka/internal/codegen for the format), writes one
// <message>_gen.go per message plus support_gen.go (and registry_gen.go
// for metadata records) into -out, and deletes *_gen.go files in -out that
// it no longer produces.
package main
