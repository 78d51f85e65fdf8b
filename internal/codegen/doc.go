// Package codegen reads the definition files from which Krabka generates
// the Go codecs of Kafka's metadata records and control records, and of
// Krabka's private RPCs.
//
// Kafka describes its messages in JSON schemas. Krabka keeps its own
// definitions, in a small line-oriented text format, so that the
// generator depends on nothing but these files, and a conformance test
// (see conformance_test.go) compares every definition with Kafka's schema
// field by field, and the private RPCs' definitions with the schemas of
// docs/wire.md. Package [github.com/krabka-go/krabka/internal/codegen/gogen]
// turns parsed definitions into Go; the command
// internal/codegen/cmd/krabkagen runs both from go:generate.
//
// # File layout
//
// A definition file (*.def) describes exactly one message. It is read line
// by line; leading and trailing blanks are ignored, so indentation is free
// and used only to show nesting. Empty lines and lines starting with # are
// comments. Every other line starts with a directive word:
//
//	message <Name>                    first directive of the file
//	kind metadata|data|request|response  the message kind (required)
//	apikey <N>                        the API key (required for metadata, request
//	                                  and response; not allowed for data)
//	versions <range>                  the valid versions (required; closed range)
//	flexible <range>                  the flexible versions (required)
//	about <text>                      documentation of the last message, field or common
//	field <Name> <type> <attributes>  a field of the enclosing structure
//	common <Name> versions=<range> {  a shared structure (Kafka's commonStructs)
//	}                                 closes the innermost { block
//
// kind, apikey, versions and flexible must come before the first field.
// Several about lines in a row are joined with spaces, so long text can be
// wrapped. An about line documents the most recent message, field or
// common line; it is an error after a closing }.
//
// # Version ranges
//
// A range is "none" (empty), "N" (only N), "N+" (N and later) or "N-M"
// (N to M inclusive). The message's versions must be closed ("0" or
// "0-4"), so that the generator knows every version.
//
// # Types
//
//	bool                       one byte, 0 or 1
//	int8 int16 int32 int64     big-endian two's complement
//	uint16                     big-endian unsigned
//	float64                    big-endian IEEE 754
//	string                     int16 length (flexible: uvarint length+1) and UTF-8 bytes
//	bytes, records             int32 length (flexible: uvarint length+1) and bytes
//	uuid                       16 bytes
//	[]T                        int32 count (flexible: uvarint count+1) and elements; T is
//	                           a primitive or a structure name
//	Name                       a structure, inline or common
//
// A structure type is either inline: the field line ends with { and the
// structure's fields follow until the matching }, or common: the type
// names a common block of the same file. Arrays of arrays do not exist.
//
// # Field attributes
//
// Attributes follow the type, separated by blanks, in any order:
//
//	versions=<range>   versions that carry the field (required, not none)
//	nullable=<range>   versions in which the value may be null; only string,
//	                   bytes, records and arrays
//	tagged=<range>     versions in which the field is a tagged field rather
//	                   than a positional one; requires tag= and flexible versions
//	tag=<N>            the field's tag, unique within its structure
//	default=<value>    the default value (see below)
//	entity=<name>      Kafka's entity type (brokerId, topicName, ...); documentation
//	mapkey             the field is a key of the enclosing array's entries
//	ignorable          encoding at a version that lacks the field silently drops
//	                   its value instead of failing
//	inline=<N>         (arrays) the Go struct holds room for N elements, so that
//	                   decoding an array of at most N elements allocates no
//	                   slice; the decoded slice then points into the struct
//	{                  (last) the type is an inline structure; fields follow
//
// A value with blanks or quotes is written as a Go double-quoted string
// (default="a b"). Field names, like message and structure names, are Go
// exported identifiers; the names of generated fields and methods
// (UnknownTags, Default, AppendTo, DecodeFrom, MinVersion, MaxVersion,
// APIKey, GetVersion, SetVersion, ControlType) are reserved, and a
// metadata message cannot have a top-level field named Version (the
// generated struct uses it for the record version).
//
// # Defaults
//
// Without default=, a field defaults to false, zero, the empty string, an
// empty array or empty bytes, or the zero UUID; records fields always
// default to null, as in Kafka. default= accepts: null for
// a nullable field; true or false for bool; a decimal, negative or
// 0x-prefixed hexadecimal integer within the type's range; a float for
// float64; any string for string. uuid, bytes and records fields accept
// no other default than null. Structures have no default= (their
// default is the default of each of their fields). The defaults matter for
// the wire: a tagged field is written only when it differs from its
// default, and a field that the encoding version lacks must hold its
// default unless it is ignorable.
//
// # Encoding rules that the definitions imply
//
// A version in flexible= uses the compact forms for strings, bytes and
// arrays, and every structure ends with a tagged-field section: a uvarint
// count, then (uvarint tag, uvarint size, payload) for each present tagged
// field in ascending tag order. Unknown tags are kept on decode and
// written back on encode. Non-flexible versions have no tagged fields.
//
// # Private RPCs
//
// Kinds request and response describe the two messages of one of Krabka's
// private RPCs (docs/wire.md); a request FooRequest needs the response
// FooResponse with the same apikey. Every version must be flexible, fields
// cannot be tagged, and Key, IsFlexible, ReadFrom, ResponseKind,
// RequestKind and Version are reserved names. Field and structure names
// are Kafka's ("LeaderId"); the generated Go names end in ID instead of Id.
// Their codecs follow the RPCs' rules rather than the metadata log's:
// decoding skips every tagged field and ignores bytes after the message,
// reads any non-zero byte as a true bool, requires strings to be UTF-8 (of
// any length) and returns byte fields that alias the input.
//
// # Example
//
//	# RegisterControllerRecord (metadata api key 27).
//	message RegisterControllerRecord
//	kind metadata
//	apikey 27
//	versions 0
//	flexible 0+
//	about RegisterControllerRecord registers a controller.
//
//	field ControllerId int32 versions=0+ entity=brokerId
//	  about The controller id.
//	field EndPoints []ControllerEndpoint versions=0+ {
//	  about The endpoints of the controller.
//	  field Name string versions=0+ mapkey
//	    about The name of the endpoint.
//	  field Port uint16 versions=0+
//	    about The port.
//	}
//	field Rack string versions=0+ nullable=0+ tagged=0+ tag=0 default=null
//	  about The rack, if any.
package codegen
