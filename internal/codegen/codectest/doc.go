// Package codectest generates random values of generated message types for
// property tests. It reads the message's definition to know which fields a
// version carries, where null is allowed, and which tags are taken, and
// fills a generated struct through reflection, so a new definition is
// covered by the round-trip tests without new test code.
//
// Values follow the codecs' normal form, so that decode(encode(v)) must
// equal v exactly: fields absent at the version keep their defaults, null
// appears only at nullable versions, an empty array or byte string of a
// field that is never nullable is nil while one of a field that is
// nullable at some version is non-nil, and NaN is never generated.
package codectest
