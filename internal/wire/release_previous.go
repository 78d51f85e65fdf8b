//go:build krabka_previous

package wire

// submitChangeMax is 0 in a build with the tag krabka_previous: the
// previous release's SubmitChange, without conditions (see
// release_current.go).
const submitChangeMax int16 = 0
