//go:build !bugzoo

package bugzoo

// Enabled reports whether this build can re-inject an entry (the build
// tag bugzoo).
const Enabled = false

// Active reports whether the entry id is re-injected: never, in a build
// without the tag bugzoo. The call inlines to false and the code it
// guards is compiled away.
func Active(id ID) bool { return false }

// Selected returns the entry re-injected in this build, or 0.
func Selected() ID { return 0 }
