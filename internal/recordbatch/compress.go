package recordbatch

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// DefaultMaxDecompressedSize is the decompressed-size limit a [Decoder]
// applies when its MaxDecompressedSize is zero: 64 MiB, eight times KRaft's
// 8 MiB maximum batch size.
const DefaultMaxDecompressedSize = 64 << 20

// xerialMagic starts a snappy stream written by the xerial snappy-java
// SnappyOutputStream, which Kafka's Java clients and brokers use. It is
// followed by a big-endian int32 version and an int32 minimum compatible
// version, then by blocks of [int32 length][raw snappy block].
var xerialMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialBlockSize is snappy-java's default block size, 32 KiB.
const xerialBlockSize = 32 << 10

// errTooLarge marks output over the decompression limit.
var errTooLarge = errors.New("decompressed size over limit")

// decompressors holds reusable decoders, created on first use.
type decompressors struct {
	br      bytes.Reader
	gz      *gzip.Reader
	lz      *lz4.Reader
	zs      *zstd.Decoder
	zsLimit int
}

// decompress appends the decompressed form of src to dst[:0], returning
// errTooLarge (possibly wrapped) when the output would exceed limit bytes.
func (d *decompressors) decompress(c Compression, dst, src []byte, limit int) ([]byte, error) {
	switch c {
	case CompressionGzip:
		d.br.Reset(src)
		if d.gz == nil {
			gz, err := gzip.NewReader(&d.br)
			if err != nil {
				return dst, fmt.Errorf("gzip: %w", err)
			}
			d.gz = gz
		} else if err := d.gz.Reset(&d.br); err != nil {
			return dst, fmt.Errorf("gzip: %w", err)
		}
		return readLimited(d.gz, dst, limit)
	case CompressionSnappy:
		return snappyDecode(dst, src, limit)
	case CompressionLZ4:
		d.br.Reset(src)
		if d.lz == nil {
			d.lz = lz4.NewReader(&d.br)
		} else {
			d.lz.Reset(&d.br)
		}
		return readLimited(d.lz, dst, limit)
	case CompressionZstd:
		if d.zs == nil || d.zsLimit != limit {
			zs, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderLowmem(true))
			if err != nil {
				return dst, fmt.Errorf("zstd: %w", err)
			}
			if d.zs != nil {
				d.zs.Close()
			}
			d.zs, d.zsLimit = zs, limit
		}
		out, err := d.zs.DecodeAll(src, dst[:0])
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit {
			return out, errTooLarge
		}
		if err != nil {
			return out, fmt.Errorf("zstd: %w", err)
		}
		return out, nil
	}
	return dst, fmt.Errorf("unknown codec %d", uint8(c))
}

// readLimited reads r to EOF into dst[:0], growing dst at most to limit+1
// bytes so that a decompression bomb costs no more than the limit.
func readLimited(r io.Reader, dst []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	for {
		if len(dst) == cap(dst) {
			if len(dst) > limit {
				return dst, errTooLarge
			}
			want := min(max(2*cap(dst), 4096), limit+1)
			dst = slices.Grow(dst, want-len(dst))
		}
		n, err := r.Read(dst[len(dst):cap(dst)])
		dst = dst[:len(dst)+n]
		if len(dst) > limit {
			return dst, errTooLarge
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, err
		}
	}
}

// snappyDecode decodes either an xerial-framed stream or one raw snappy
// block (as written by librdkafka and franz-go).
func snappyDecode(dst, src []byte, limit int) ([]byte, error) {
	dst = dst[:0]
	if len(src) >= 16 && [8]byte(src[:8]) == xerialMagic {
		p := src[16:]
		for len(p) > 0 {
			if len(p) < 4 {
				return dst, errors.New("snappy: truncated xerial block length")
			}
			n := binary.BigEndian.Uint32(p)
			p = p[4:]
			if uint64(n) > uint64(len(p)) {
				return dst, fmt.Errorf("snappy: xerial block of %d bytes, %d left", n, len(p))
			}
			var err error
			if dst, err = snappyBlock(dst, p[:n], limit); err != nil {
				return dst, err
			}
			p = p[n:]
		}
		return dst, nil
	}
	return snappyBlock(dst, src, limit)
}

// snappyBlock appends the decoding of one raw snappy block to dst.
func snappyBlock(dst, blk []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(blk)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	if n > limit-len(dst) {
		return dst, errTooLarge
	}
	dst = slices.Grow(dst, n)
	out, err := snappy.Decode(dst[len(dst):len(dst)+n], blk)
	if err != nil {
		return dst, fmt.Errorf("snappy: %w", err)
	}
	if len(out) != n {
		return dst, fmt.Errorf("snappy: decoded %d bytes, header says %d", len(out), n)
	}
	return dst[:len(dst)+n], nil
}

// sliceWriter is an io.Writer appending to a byte slice.
type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// compressors holds reusable encoders, created on first use.
type compressors struct {
	w  sliceWriter
	gz *gzip.Writer
	lz *lz4.Writer
	zs *zstd.Encoder
}

// compress appends the compressed form of src to dst in the framing Kafka's
// Java code writes: gzip member, xerial-framed snappy, LZ4 frame with
// 64 KiB independent blocks and no content checksum, zstd frame.
func (c *compressors) compress(codec Compression, dst, src []byte) ([]byte, error) {
	switch codec {
	case CompressionGzip:
		c.w.b = dst
		if c.gz == nil {
			c.gz = gzip.NewWriter(&c.w)
		} else {
			c.gz.Reset(&c.w)
		}
		if _, err := c.gz.Write(src); err != nil {
			return dst, fmt.Errorf("gzip: %w", err)
		}
		if err := c.gz.Close(); err != nil {
			return dst, fmt.Errorf("gzip: %w", err)
		}
		out := c.w.b
		c.w.b = nil
		return out, nil
	case CompressionSnappy:
		dst = append(dst, xerialMagic[:]...)
		dst = binary.BigEndian.AppendUint32(dst, 1) // version
		dst = binary.BigEndian.AppendUint32(dst, 1) // minimum compatible version
		for p := src; len(p) > 0; {
			blk := p[:min(len(p), xerialBlockSize)]
			p = p[len(blk):]
			at := len(dst)
			dst = append(dst, 0, 0, 0, 0)
			dst = slices.Grow(dst, snappy.MaxEncodedLen(len(blk)))
			enc := snappy.Encode(dst[len(dst):cap(dst)], blk)
			binary.BigEndian.PutUint32(dst[at:], uint32(len(enc)))
			dst = dst[:len(dst)+len(enc)]
		}
		return dst, nil
	case CompressionLZ4:
		c.w.b = dst
		if c.lz == nil {
			c.lz = lz4.NewWriter(&c.w)
		} else {
			c.lz.Reset(&c.w)
		}
		if err := c.lz.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false)); err != nil {
			return dst, fmt.Errorf("lz4: %w", err)
		}
		if _, err := c.lz.Write(src); err != nil {
			return dst, fmt.Errorf("lz4: %w", err)
		}
		if err := c.lz.Close(); err != nil {
			return dst, fmt.Errorf("lz4: %w", err)
		}
		out := c.w.b
		c.w.b = nil
		return out, nil
	case CompressionZstd:
		if c.zs == nil {
			zs, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
			if err != nil {
				return dst, fmt.Errorf("zstd: %w", err)
			}
			c.zs = zs
		}
		return c.zs.EncodeAll(src, dst), nil
	}
	return dst, fmt.Errorf("unknown codec %d", uint8(codec))
}
