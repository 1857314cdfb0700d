package share

import (
	"os"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/dataplane"
)

// TestIntegrationShare: with the default idle policy, a router forwarding
// bulk TCP and busy loops on the same cores both keep a fair part of
// what they get alone (a router that spun at the others' expense, or
// that the busy loops starved, fails).
func TestIntegrationShare(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces)")
	}
	res, err := Run(Options{Polls: []dataplane.PollMode{dataplane.PollAdaptive}, Duration: 3 * time.Second, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	t.Logf("%+v", r)
	if r.TCPAloneMbps < 10 {
		t.Fatalf("TCP alone %.1f Mbit/s: the lab does not forward", r.TCPAloneMbps)
	}
	if r.HogKept < 0.3 || r.TCPKept < 0.2 {
		t.Fatalf("sharing: busy loops kept %.0f %% of their CPU, TCP %.0f %% of its goodput; want >= 30 %% and >= 20 %%", 100*r.HogKept, 100*r.TCPKept)
	}
}
