// Package sample holds a generated message, Sample, that exercises the
// parts of the definition format Kafka's metadata and control schemas do
// not use (classic encodings, messages that become flexible, ignorable
// fields, tagged structures), so that the generator's output for them is
// compiled and tested. It is not used by the product.
package sample

//go:generate go run github.com/krabka-go/krabka/internal/codegen/cmd/krabkagen -pkg sample -defs definitions -out .
