package wire

import (
	"fmt"
	"math/rand/v2"
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fill sets every exported field of the kmsg message m (except Version and
// UnknownTags) to a pseudo-random value drawn from rng, recursing into
// structs and slices (one or two elements). Fields that do not exist at the
// message's version are set too; the encoder drops them, which is why the
// round-trip tests compare encodings rather than structs.
func fill(m any, rng *rand.Rand) {
	fillValue(reflect.ValueOf(m).Elem(), rng, 0)
}

var tagsType = reflect.TypeFor[kmsg.Tags]()

func fillValue(v reflect.Value, rng *rand.Rand, depth int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == tagsType {
			return
		}
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Name == "Version" {
				continue
			}
			fillValue(v.Field(i), rng, depth+1)
		}
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 1)
	case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(2000)) - 1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(rng.IntN(60000)))
	case reflect.Float64:
		v.SetFloat(float64(rng.IntN(1000)) / 8)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", rng.IntN(1000)))
	case reflect.Array:
		for i := 0; i < v.Len(); i++ {
			fillValue(v.Index(i), rng, depth+1)
		}
	case reflect.Pointer:
		if rng.IntN(4) == 0 {
			return // leave nil: nullable fields are null now and then
		}
		p := reflect.New(v.Type().Elem())
		fillValue(p.Elem(), rng, depth+1)
		v.Set(p)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b := make([]byte, rng.IntN(8))
			for i := range b {
				b[i] = byte(rng.IntN(256))
			}
			v.SetBytes(b)
			return
		}
		if depth > 8 {
			return
		}
		n := 1 + rng.IntN(2)
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := 0; i < n; i++ {
			fillValue(s.Index(i), rng, depth+1)
		}
		v.Set(s)
	}
}
