// Package gogen generates Go codecs from parsed definitions (package
// internal/codegen).
//
// For each message it writes one <message>_gen.go file with a struct per
// message and per nested structure (nested names are the message name
// followed by the structure name, to keep them unique in the package),
// documented from the definitions' about text and annotated with each
// field's versions, nullability, tag and default. Each struct gets
// Default, and each message New<Name>, MinVersion, MaxVersion,
// AppendTo(dst, version) and DecodeFrom(b, version); messages of kind
// metadata also get APIKey, GetVersion and SetVersion and a Version field.
// Requests and responses (the private RPCs) instead get the methods of
// kmsg.Request and kmsg.Response: Key, GetVersion, SetVersion, IsFlexible,
// ResponseKind or RequestKind, AppendTo(dst) and ReadFrom(src), which
// encode and decode at the Version field.
// support_gen.go names RawTaggedField and the typed errors of package
// genrt with type aliases (one type across all generated packages), and
// registry_gen.go (metadata packages only) the APIKey constants, NewRecord,
// APIKeys and APIKey.String; the package itself declares the APIKey type
// and the Record interface.
//
// The encoders append to a caller's buffer and branch on the version only
// where fields differ between versions; version conditions are simplified
// against the versions in which a structure can occur. Output is
// deterministic: it depends only on the definitions, it is gofmt'ed, and
// messages, files and tags are emitted in sorted order, so the generated
// files can be checked for staleness by regenerating in memory.
package gogen
