package transport

// Meter counts the traffic of one side of the transport for metrics: a
// [Server]'s connections, the requests it reads and the responses it
// writes, or a [Peer]'s connections, the requests it writes and the
// responses it reads. Its methods run on the connections' goroutines:
// they must be safe for concurrent use, must not block and should not
// allocate.
type Meter interface {
	// Connected counts a connection opened (accepted or dialled).
	Connected()
	// Disconnected counts a connection closed.
	Disconnected()
	// Sent counts frames written with one write, bytes with their size
	// prefixes.
	Sent(frames, bytes int)
	// Received counts one frame read, bytes with its size prefix.
	Received(bytes int)
}

// frameOverhead is the size prefix in front of every frame.
const frameOverhead = 4

// nopMeter counts nothing: the Meter of a config that sets none.
type nopMeter struct{}

func (nopMeter) Connected()    {}
func (nopMeter) Disconnected() {}
func (nopMeter) Sent(int, int) {}
func (nopMeter) Received(int)  {}

// meterOr returns m, or a Meter that counts nothing when m is nil.
func meterOr(m Meter) Meter {
	if m == nil {
		return nopMeter{}
	}
	return m
}
