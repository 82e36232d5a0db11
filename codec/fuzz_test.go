package codec

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files (the FuzzDecode seed corpus)")

// fuzzLimit is small so the fuzzer can reach ErrTooLarge cheaply.
const fuzzLimit = 64 << 10

// fuzzSeeds are the frames FuzzDecode starts from: every kind of good frame
// and each way of being bad. The decoder under test is primed with the
// "full" seed, so the D seeds decode.
func fuzzSeeds(tb testing.TB) map[string][]byte {
	bases := counterSnapshots(20, 3, 60)
	e := mustEncoder(tb, WithMaxSize(fuzzLimit))
	full := mustEncode(tb, e, bases[0])
	delta := mustEncode(tb, e, bases[1])
	delta2 := mustEncode(tb, e, bases[2]) // against bases[1], unknown to the decoder
	empty := mustEncode(tb, mustEncoder(tb), nil)
	h, _ := ParseHeader(delta)
	wrongHash := bytes.Clone(delta)
	wrongHash[9] ^= 0xff
	lying := append(appendHeader(nil, Header{Kind: KindDelta, Base: h.Base, Hash: h.Hash, Length: h.Length - 7, BodyLen: h.BodyLen}), delta[h.HeaderLen:]...)
	tooLarge := appendHeader(nil, Header{Kind: KindFull, Hash: 1, Length: fuzzLimit + 1, BodyLen: 4})
	return map[string][]byte{
		"full":          full,
		"delta":         delta,
		"unknown-base":  delta2,
		"empty-payload": empty,
		"wrong-hash":    wrongHash,
		"lying-length":  lying,
		"too-large":     append(tooLarge, 0x28, 0xb5, 0x2f, 0xfd),
		"truncated":     delta[:len(delta)-3],
		"header-only":   delta[:h.HeaderLen],
		"garbage":       []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"),
	}
}

func FuzzDecode(f *testing.F) {
	seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s)
	}
	prime := seeds["full"]
	f.Fuzz(func(t *testing.T, frame []byte) {
		d, err := NewDecoder(WithMaxSize(fuzzLimit), WithRing(2))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.DecodeAll(prime, nil); err != nil {
			t.Fatalf("priming: %v", err)
		}
		out, err := d.DecodeAll(frame, nil)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) &&
				!errors.Is(err, ErrChecksum) && !errors.Is(err, ErrUnknownBase) {
				t.Fatalf("error wraps no sentinel: %v", err)
			}
			if out != nil {
				t.Fatalf("error %v with %d bytes of output appended to nil", err, len(out))
			}
			return
		}
		h, herr := ParseHeader(frame)
		switch {
		case herr != nil:
			t.Fatalf("decoded a frame whose header does not parse: %v", herr)
		case len(out) > fuzzLimit:
			t.Fatalf("decoded %d bytes past the %d limit", len(out), fuzzLimit)
		case len(out) != h.Length || Hash(out) != h.Hash:
			t.Fatalf("decoded %d bytes hashing %#x, header says %d and %#x", len(out), Hash(out), h.Length, h.Hash)
		}
		// What decoded is now a base: the same bytes as a full frame decode too.
		e := mustEncoder(t, WithMaxSize(fuzzLimit))
		again, err := d.DecodeAll(mustEncode(t, e, out), nil)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("re-encoding the output: %v", err)
		}
	})
}

// TestFuzzSeedCorpus keeps testdata/fuzz/FuzzDecode (go test's own corpus
// layout) in step with fuzzSeeds; -update rewrites it.
func TestFuzzSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	for name, frame := range fuzzSeeds(t) {
		want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", frame)
		path := filepath.Join(dir, "seed-"+name)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("seed corpus: %v (run go test ./codec -run TestFuzzSeedCorpus -update)", err)
		}
		if string(got) != want {
			t.Errorf("%s is stale (run go test ./codec -run TestFuzzSeedCorpus -update)", path)
		}
	}
}
