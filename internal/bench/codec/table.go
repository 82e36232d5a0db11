package codec

import (
	"fmt"
	"io"
	"text/tabwriter"

	deltacodec "github.com/triage-agent/triage/codec"
)

// WriteTable writes r as `triage bench codec` prints it: the bytes of raw,
// zstd alone and the delta codec, and the time per frame each way. input
// and level name the file and the zstd level in the heading.
func (r Result) WriteTable(w io.Writer, input, level string, s deltacodec.EncoderStats) {
	saved := func(n int64) string {
		return fmt.Sprintf("%.2f%%", 100*(1-float64(n)/float64(max(r.RawBytes, 1))))
	}
	perFrame := func(n int64) float64 { return float64(n) / float64(max(r.Frames, 1)) }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "input\t%s (%d frames, zstd level %s)\n", input, r.Frames, level)
	fmt.Fprintf(tw, "frames\t%d full, %d delta\n", s.Full, s.Delta)
	fmt.Fprintln(tw, "\tbytes\tbytes/frame\tfewer than raw")
	fmt.Fprintf(tw, "raw\t%d\t%.0f\t-\n", r.RawBytes, perFrame(r.RawBytes))
	fmt.Fprintf(tw, "zstd only\t%d\t%.0f\t%s\n", r.ZstdOnlyBytes, perFrame(r.ZstdOnlyBytes), saved(r.ZstdOnlyBytes))
	fmt.Fprintf(tw, "delta codec\t%d\t%.0f\t%s\n", r.WireBytes, perFrame(r.WireBytes), saved(r.WireBytes))
	fmt.Fprintf(tw, "encode\t%.0f ns/frame\n", r.EncodeNsPerFrame)
	fmt.Fprintf(tw, "decode\t%.0f ns/frame (verified byte for byte)\n", r.DecodeNsPerFrame)
	tw.Flush()
}
