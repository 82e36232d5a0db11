package serve

import (
	"log/slog"
	"sync"
	"time"
)

// connRate is the per-address budget of new connections, QUIC and TCP: a
// token bucket per client IP that holds MaxNewConnsPerIP tokens and
// refills at that many a second. A QUIC attempt over it is refused from
// its first packet, before the handshake (quic.Config.GetConfigForClient:
// the client sees CONNECTION_REFUSED), so a flood from one address costs
// the agent a packet, not a TLS handshake; a TCP one is closed at accept.
// MaxConnsPerIP (connections open at once) is checked after the handshake,
// as before, where the client can be told why.
//
// The address of a QUIC Initial packet is not yet verified: a sender that
// spoofs another address spends that address's budget. The global
// MaxConns bounds what such a flood can take.
type connRate struct {
	rate float64 // tokens per second, and the bucket's size

	mu      sync.Mutex
	buckets map[string]*tokenBucket
	swept   time.Time
}

type tokenBucket struct {
	tokens float64
	at     time.Time
}

// maxRateBuckets bounds the addresses tracked: past it, a sweep drops the
// buckets that have refilled (addresses that went quiet), and an address
// that still finds no room is let through untracked (the connection
// limits still apply to it), so a flood from many addresses cannot grow
// this map without bound.
const maxRateBuckets = 1 << 16

func newConnRate(perSecond int) *connRate {
	return &connRate{rate: float64(perSecond), buckets: map[string]*tokenBucket{}}
}

// allow takes one token of ip's bucket, or reports that it is empty.
func (r *connRate) allow(ip string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, ok := r.buckets[ip]
	if !ok {
		if len(r.buckets) >= maxRateBuckets && !r.sweep(now) {
			return true
		}
		b = &tokenBucket{tokens: r.rate, at: now}
		r.buckets[ip] = b
	}
	b.tokens = min(r.rate, b.tokens+r.rate*now.Sub(b.at).Seconds())
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// sweep drops the full buckets, at most once a second, and reports
// whether there is room for one more.
func (r *connRate) sweep(now time.Time) bool {
	if now.Sub(r.swept) >= time.Second {
		r.swept = now
		for ip, b := range r.buckets {
			if b.tokens+r.rate*now.Sub(b.at).Seconds() >= r.rate {
				delete(r.buckets, ip)
			}
		}
	}
	return len(r.buckets) < maxRateBuckets
}

// refusalLog logs refused connections at most once a second, with the
// number left out since the last line: a flood of attempts must not
// become a flood of log lines.
type refusalLog struct {
	log *slog.Logger

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (l *refusalLog) warn(now time.Time, msg string, args ...any) {
	l.mu.Lock()
	if now.Sub(l.last) < time.Second {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	n := l.suppressed
	l.last, l.suppressed = now, 0
	l.mu.Unlock()
	if n > 0 {
		args = append(args, "refusals_not_logged", n)
	}
	l.log.Warn(msg, args...)
}
