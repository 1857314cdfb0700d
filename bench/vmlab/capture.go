package vmlab

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// Capture is a running tcpdump writing a pcap file.
type Capture struct {
	Path string
	cmd  *exec.Cmd
	errb *syncBuffer
	done chan struct{}
	werr error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// CaptureAvailable reports whether tcpdump and tshark are installed.
func CaptureAvailable() error {
	for _, c := range []string{"tcpdump", "tshark"} {
		if _, err := exec.LookPath(c); err != nil {
			return fmt.Errorf("vmlab: %s not found (run scripts/vmlab-deps.sh): %w", c, err)
		}
	}
	return nil
}

// StartCapture runs tcpdump on ifname inside ns (nil: the current
// namespace), writing every frame, unbuffered, to path. It returns once
// tcpdump listens; ctx bounds only that wait.
func StartCapture(ctx context.Context, ns *nettest.NS, ifname, path string) (*Capture, error) {
	cmd := ns.Command(context.Background(), "tcpdump", "-i", ifname, "-w", path, "-U", "-s", "0", "-n", "--immediate-mode")
	c := &Capture{Path: path, cmd: cmd, errb: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stderr = c.errb
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("vmlab: tcpdump: %w", err)
	}
	go func() {
		c.werr = cmd.Wait()
		close(c.done)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for !strings.Contains(c.errb.String(), "listening on") {
		select {
		case <-c.done:
			return nil, fmt.Errorf("vmlab: tcpdump exited: %v: %s", c.werr, c.errb.String())
		case <-ctx.Done():
			c.Stop()
			return nil, ctx.Err()
		case <-deadline:
			c.Stop()
			return nil, fmt.Errorf("vmlab: tcpdump did not start: %s", c.errb.String())
		case <-tick.C:
		}
	}
	return c, nil
}

// Stop ends tcpdump (SIGTERM; it flushes the file) and waits for it.
func (c *Capture) Stop() error {
	select {
	case <-c.done:
		return nil
	default:
	}
	terminate(c.cmd.Process, c.done)
	return nil
}

// terminate sends p SIGTERM, and SIGKILL if it has not exited 5 s later;
// it returns once exited (closed when p's Wait returned) is closed.
func terminate(p *os.Process, exited <-chan struct{}) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = p.Kill()
		<-exited
	}
}

// PcapReport is tshark's view of a capture.
type PcapReport struct {
	Frames int
	// Protocols counts the frames each protocol appears in, as tshark's
	// frame.protocols names them (e.g. "eth", "pppoed", "pppoes", "lcp",
	// "chap", "pap", "ipcp", "icmp").
	Protocols map[string]int
	// Problems lists frames tshark found malformed, flagged with an
	// error-level expert message, or could not dissect (payload left as
	// "data"), as "frame N: protocols: message".
	Problems []string
}

// Has reports whether any frame contains proto.
func (r *PcapReport) Has(proto string) bool { return r.Protocols[proto] > 0 }

func (r *PcapReport) String() string {
	keys := make([]string, 0, len(r.Protocols))
	for k := range r.Protocols {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	fmt.Fprintf(&b, "%d frames:", r.Frames)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, r.Protocols[k])
	}
	for _, p := range r.Problems {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	return b.String()
}

// DecodePcap decodes path with `tshark -r` and reports per-protocol counts
// and every malformed, error-flagged or undissected frame.
func DecodePcap(ctx context.Context, path string) (*PcapReport, error) {
	cmd := exec.CommandContext(ctx, "tshark", "-n", "-r", path, "-T", "fields",
		"-E", "separator=|", "-E", "occurrence=a", "-E", "aggregator=;",
		"-e", "frame.number", "-e", "frame.protocols",
		"-e", "_ws.expert.severity", "-e", "_ws.expert.message")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("vmlab: tshark -r %s: %w: %s", path, err, stderr.String())
	}
	return parseTsharkFields(out)
}

// payloadCarrier are protocols whose payload tshark shows as "data"
// when no application dissector claims it: ICMP echo data, UDP/TCP
// payload. "data" after anything else (Ethernet, PPPoE, PPP) means an
// unknown frame.
var payloadCarrier = map[string]bool{"icmp": true, "udp": true, "tcp": true, "icmpv6": true}

// tsharkSevError is the value tshark prints for _ws.expert.severity of an
// error-level expert item (PI_ERROR, 0x00800000).
const tsharkSevError = 8388608

func parseTsharkFields(out []byte) (*PcapReport, error) {
	r := &PcapReport{Protocols: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 2 {
			return nil, fmt.Errorf("vmlab: unexpected tshark line %q", line)
		}
		r.Frames++
		protos := strings.Split(f[1], ":")
		var why []string
		seen := map[string]bool{}
		for i, p := range protos {
			if !seen[p] {
				seen[p] = true
				r.Protocols[p]++
			}
			switch {
			case p == "_ws.malformed" || p == "_ws.short":
				why = append(why, p)
			case p == "data" && (i == 0 || !payloadCarrier[protos[i-1]]):
				why = append(why, "undissected payload after "+strings.Join(protos[:i], ":"))
			}
		}
		if len(f) >= 4 && f[2] != "" {
			sevs, msgs := strings.Split(f[2], ";"), strings.Split(f[3], ";")
			for i, s := range sevs {
				var sev int
				if _, err := fmt.Sscan(s, &sev); err == nil && sev >= tsharkSevError {
					m := ""
					if i < len(msgs) {
						m = msgs[i]
					}
					why = append(why, "expert error: "+m)
				}
			}
		}
		if len(why) > 0 {
			r.Problems = append(r.Problems, fmt.Sprintf("frame %s: %s: %s", f[0], f[1], strings.Join(why, ", ")))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if r.Frames == 0 {
		return r, errors.New("vmlab: capture holds no frames")
	}
	return r, nil
}

// CountFrames returns how many frames of the pcap at path match a tshark
// display filter (e.g. `pppoe.code == 0x09 && pppoed.tags.max_payload`).
// It can be called while a Capture is still running (tcpdump writes each
// frame as it comes).
func CountFrames(ctx context.Context, path, filter string) (int, error) {
	cmd := exec.CommandContext(ctx, "tshark", "-n", "-r", path, "-Y", filter, "-T", "fields", "-e", "frame.number")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		// A capture cut mid-record (still being written) still yields
		// the complete frames before the cut.
		if !strings.Contains(stderr.String(), "cut short") {
			return 0, fmt.Errorf("vmlab: tshark -Y %q: %w: %s", filter, err, stderr.String())
		}
	}
	return len(bytes.Fields(out)), nil
}
