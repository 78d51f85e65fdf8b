package quorum

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestDataDriven runs the high-watermark and tally scripts in testdata/:
//
//	hw current=C start=S offsets=(o1,o2,...)   NextHighWatermark
//	tally voters=N granted=G rejected=R         Tally
func TestDataDriven(t *testing.T) {
	datadriven.RunTest(t, "testdata/quorum.txt", func(t *testing.T, td *datadriven.TestData) string {
		switch td.Cmd {
		case "hw":
			var current, start int64
			td.ScanArgs(t, "current", &current)
			td.ScanArgs(t, "start", &start)
			arg, ok := td.Arg("offsets")
			if !ok {
				td.Fatalf(t, "missing offsets=(...)")
			}
			var offsets []Offset
			for _, v := range arg.Vals {
				o, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					td.Fatalf(t, "offset %q: %v", v, err)
				}
				offsets = append(offsets, Offset(o))
			}
			hw, changed := NextHighWatermark(Offset(current), Offset(start), offsets)
			return fmt.Sprintf("majority offset %d\nhigh watermark %d (changed=%t)\n", MajorityOffset(offsets), hw, changed)
		case "tally":
			var voters, granted, rejected int
			td.ScanArgs(t, "voters", &voters)
			td.ScanArgs(t, "granted", &granted)
			td.ScanArgs(t, "rejected", &rejected)
			return Tally(voters, granted, rejected).String() + "\n"
		}
		td.Fatalf(t, "unknown command %q", td.Cmd)
		return ""
	})
}
