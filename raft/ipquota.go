package raft

import (
	"math"
	"net/netip"
	"sync"

	"github.com/krabka-go/krabka/internal/transport"
	"github.com/krabka-go/krabka/metadata"
)

// quotaKeyConnectionRate is the client quota key of an ip entity's
// connection creation rate (Kafka's QuotaConfig.IP_CONNECTION_RATE_OVERRIDE_CONFIG,
// KIP-612).
const quotaKeyConnectionRate = "connection_creation_rate"

// ipRateTable is the connection_creation_rate of each ip entity of one
// image, by canonical address, and the default entity's.
type ipRateTable struct {
	byIP       map[string]int
	def        int
	hasDefault bool
}

// newIPRateTable reads the ip quotas of img. A value is truncated to an
// integer, as Kafka's ClientQuotaMetadataManager does; 2147483647 or more
// is Kafka's default, no quota; a negative one (which Kafka's
// AlterClientQuotas refuses) is read as 0. An entity name that is not an
// IP address applies to no connection.
func newIPRateTable(img *metadata.Image) *ipRateTable {
	t := &ipRateTable{byIP: map[string]int{}}
	for q := range img.ClientQuotas().All() {
		if len(q.Entity) != 1 || q.Entity[0].Type != metadata.QuotaEntityIP {
			continue
		}
		v, ok := q.Value(quotaKeyConnectionRate)
		if !ok || v >= math.MaxInt32 {
			continue
		}
		rate := 0
		if v > 0 {
			rate = int(v)
		}
		name := q.Entity[0].Name
		if name == nil {
			t.def, t.hasDefault = rate, true
			continue
		}
		if a, err := netip.ParseAddr(*name); err == nil {
			t.byIP[transport.CanonicalIP(a)] = rate
		}
	}
	return t
}

// lookup returns the rate of ip: its own, else the default entity's.
func (t *ipRateTable) lookup(ip string) (int, bool) {
	if r, ok := t.byIP[ip]; ok {
		return r, true
	}
	return t.def, t.hasDefault
}

// ipRateLookup returns the per-address rate lookup of a node's
// listeners over its current image, rebuilding the table only when the
// image changed.
func ipRateLookup(image func() *metadata.Image) func(ip string) (int, bool) {
	var mu sync.Mutex
	var seen *metadata.Image
	var table *ipRateTable
	return func(ip string) (int, bool) {
		img := image()
		mu.Lock()
		if img != seen {
			seen, table = img, newIPRateTable(img)
		}
		t := table
		mu.Unlock()
		return t.lookup(ip)
	}
}
