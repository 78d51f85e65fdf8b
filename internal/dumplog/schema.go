package dumplog

// versionRange is an inclusive range of message versions; hi is 32767 for
// an open range. The zero value with set false is the empty range.
type versionRange struct {
	lo, hi int16
	set    bool
}

// contains reports whether v is in the range.
func (r versionRange) contains(v int16) bool { return r.set && v >= r.lo && v <= r.hi }

// structSchema describes the fields of one message or nested structure,
// as far as the JSON form needs them: which versions carry each field and
// in which versions it is tagged.
type structSchema struct {
	// name is the message name for top-level messages ("TopicRecord"),
	// empty for nested structures.
	name string
	// valid is the range of versions of a top-level message.
	valid  versionRange
	fields []fieldSchema
}

// fieldSchema is one field of a structSchema.
type fieldSchema struct {
	// name is the field name of the definition and of the generated Go
	// struct ("TopicId").
	name string
	// versions are the versions that carry the field.
	versions versionRange
	// tagged are the versions in which the field is tagged; there Kafka's
	// JSON converters write it only when it differs from its default.
	tagged versionRange
	// nullable are the versions in which the field may be null.
	nullable versionRange
	// elem describes the structure of a struct or array-of-struct field.
	elem *structSchema
}
