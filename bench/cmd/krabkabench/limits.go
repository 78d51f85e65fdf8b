package main

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// machineLimits are the floors a write cannot beat on this machine.
type machineLimits struct {
	fsyncP50, fsyncP99 time.Duration
	rttP50, rttP99     time.Duration
}

// measureLimits measures, in dir, a 256-byte write followed by
// fdatasync (the cost of one durable append), and the round trip of a
// 256-byte message over loopback TCP.
func measureLimits(dir string, n int) (machineLimits, error) {
	var m machineLimits
	f, err := os.OpenFile(filepath.Join(dir, "fsync-probe"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return m, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	var lat []time.Duration
	for range n {
		t0 := time.Now()
		if _, err := f.Write(benchValue); err != nil {
			return m, err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return m, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	m.fsyncP50, m.fsyncP99 = quantile(lat, 0.5), quantile(lat, 0.99)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return m, err
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, valueSize)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				return
			}
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return m, err
	}
	defer c.Close()
	buf := make([]byte, valueSize)
	lat = lat[:0]
	for range 10 * n {
		t0 := time.Now()
		if _, err := c.Write(benchValue); err != nil {
			return m, err
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			return m, err
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	m.rttP50, m.rttP99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return m, nil
}
