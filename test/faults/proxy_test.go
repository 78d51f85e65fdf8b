package faults

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// linkFault is what the network does to frames sent from one node to
// another.
type linkFault struct {
	// drop discards every frame: a partition in this direction.
	drop bool
	// delay and jitter hold each frame back delay ± jitter.
	delay, jitter time.Duration
	// loss is the probability of discarding a frame.
	loss float64
}

// network is the directed link matrix between nodes: every peer
// connection goes through a proxy, and the proxy asks the matrix what to
// do with each frame.
type network struct {
	// tlsRecords makes the proxies forward TLS records instead of Kafka
	// frames: the links of a quorum whose listeners speak TLS.
	tlsRecords bool
	mu         sync.Mutex
	faults     map[[2]int]linkFault // [from, to]
	rnd        *rand.Rand
	proxies    []*proxy
}

func newNetwork(seed uint64) *network {
	return &network{faults: map[[2]int]linkFault{}, rnd: rand.New(rand.NewPCG(seed, 7))}
}

// set replaces the fault of link from→to.
func (n *network) set(from, to int, f linkFault) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if f == (linkFault{}) {
		delete(n.faults, [2]int{from, to})
		return
	}
	n.faults[[2]int{from, to}] = f
}

// heal clears every fault.
func (n *network) heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.faults)
}

// fate decides what happens to one frame on from→to: whether it is
// dropped and how long it waits.
func (n *network) fate(from, to int) (drop bool, wait time.Duration) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f := n.faults[[2]int{from, to}]
	if f.drop || (f.loss > 0 && n.rnd.Float64() < f.loss) {
		return true, 0
	}
	wait = f.delay
	if f.jitter > 0 {
		wait += time.Duration(n.rnd.Int64N(int64(2*f.jitter))) - f.jitter
	}
	return false, max(wait, 0)
}

// maxFrame bounds a frame the proxy buffers; KRaft frames are far smaller.
const maxFrame = 64 << 20

// A TLS record is a 5-byte header (content type, version, a 2-byte
// length) and at most 2^14 + 2048 bytes of payload (RFC 8446, 5.2).
const (
	tlsRecordHeader = 5
	maxTLSRecord    = 1<<14 + 2048
)

// readUnit reads the next unit a proxy forwards whole from src: a Kafka
// frame (a 4-byte size and the frame), or a TLS record when tlsRecords.
func readUnit(src io.Reader, tlsRecords bool) ([]byte, error) {
	var head [tlsRecordHeader]byte
	h := head[:4]
	if tlsRecords {
		h = head[:]
	}
	if _, err := io.ReadFull(src, h); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(h))
	if tlsRecords {
		n = int(binary.BigEndian.Uint16(h[3:]))
	}
	if (tlsRecords && n > maxTLSRecord) || n > maxFrame {
		return nil, fmt.Errorf("a unit of %d bytes", n)
	}
	unit := make([]byte, len(h)+n)
	copy(unit, h)
	if _, err := io.ReadFull(src, unit[len(h):]); err != nil {
		return nil, err
	}
	return unit, nil
}

// proxy forwards the connections node from opens to node to, frame by
// frame, in both directions.
type proxy struct {
	net      *network
	from, to int
	target   string
	ln       net.Listener
	mu       sync.Mutex
	conns    map[net.Conn]bool
	wg       sync.WaitGroup
}

// listen starts the proxy for from→to on addr (host:0), forwarding to
// target.
func (n *network) listen(from, to int, addr, target string) (*proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &proxy{net: n, from: from, to: to, target: target, ln: ln, conns: map[net.Conn]bool{}}
	n.mu.Lock()
	n.proxies = append(n.proxies, p)
	n.mu.Unlock()
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// addr is where node from dials node to.
func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) track(c net.Conn, add bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		return false
	}
	if add {
		p.conns[c] = true
	} else {
		delete(p.conns, c)
	}
	return true
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// serve pipes one connection: requests flow from→to, answers to→from.
func (p *proxy) serve(down net.Conn) {
	defer p.wg.Done()
	if !p.track(down, true) {
		down.Close()
		return
	}
	defer p.track(down, false)
	defer down.Close()
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(up, true) {
		up.Close()
		return
	}
	defer p.track(up, false)
	defer up.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		p.pipe(down, up, p.from, p.to)
		_ = up.Close()
		_ = down.Close()
	}()
	go func() {
		defer wg.Done()
		p.pipe(up, down, p.to, p.from)
		_ = up.Close()
		_ = down.Close()
	}()
	wg.Wait()
}

// timedFrame is a frame waiting for its delivery time.
type timedFrame struct {
	at    time.Time
	frame []byte
}

// pipe copies frames from src to dst for the link from→to. A reader
// stamps each frame with its delivery time (never before the previous
// one's, as TCP keeps order) and a writer delivers it then.
func (p *proxy) pipe(src, dst net.Conn, from, to int) {
	queue := make(chan timedFrame, 1024)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for f := range queue {
			if d := time.Until(f.at); d > 0 {
				time.Sleep(d)
			}
			if _, err := dst.Write(f.frame); err != nil {
				_ = src.Close()
				for range queue {
				}
				return
			}
		}
	}()
	defer func() {
		close(queue)
		<-done
	}()
	var last time.Time
	for {
		frame, err := readUnit(src, p.net.tlsRecords)
		if err != nil {
			return
		}
		drop, wait := p.net.fate(from, to)
		if drop {
			continue
		}
		at := time.Now().Add(wait)
		if at.Before(last) {
			at = last
		}
		last = at
		queue <- timedFrame{at, frame}
	}
}

// close stops the proxy and its connections.
func (p *proxy) close() {
	_ = p.ln.Close()
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for c := range conns {
		_ = c.Close()
	}
	p.wg.Wait()
}

// close stops every proxy.
func (n *network) close() {
	n.mu.Lock()
	ps := n.proxies
	n.proxies = nil
	n.mu.Unlock()
	for _, p := range ps {
		p.close()
	}
}
