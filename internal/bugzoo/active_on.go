//go:build bugzoo

package bugzoo

// Enabled reports whether this build can re-inject an entry (the build
// tag bugzoo).
const Enabled = true

// selected is the entry to re-inject, set at link time with
// -ldflags=-X=github.com/krabka-go/krabka/internal/bugzoo.selected=z<n>
// (see [LinkFlag]); empty selects none.
var selected string

// chosen is selected, parsed when the program starts.
var chosen = mustSelect(selected)

func mustSelect(s string) ID {
	id, err := selection(s)
	if err != nil {
		panic(err)
	}
	return id
}

// Active reports whether the entry id is the one this build re-injects.
func Active(id ID) bool { return id == chosen }

// Selected returns the entry re-injected in this build, or 0.
func Selected() ID { return chosen }
