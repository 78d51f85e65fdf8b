//go:build !krabka_previous

package wire

// submitChangeMax is the highest SubmitChange version this build serves
// and sends: 1, which carries the submission's condition. A build with
// the tag krabka_previous serves the previous release's version 0 only,
// for the mixed-version upgrade of test/multiprocess; no release is
// built with it.
const submitChangeMax int16 = 1
