package lab

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pppfwd/pppfwd/internal/nettest"
)

// logLines collects a Logf's lines (the router logs from several
// goroutines) and passes them on to the test's log.
type logLines struct {
	t  *testing.T
	mu sync.Mutex
	l  []string
}

func (g *logLines) logf(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	g.mu.Lock()
	g.l = append(g.l, s)
	g.mu.Unlock()
	g.t.Log(s)
}

// count returns how many lines contain sub.
func (g *logLines) count(sub string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, s := range g.l {
		if strings.Contains(s, sub) {
			n++
		}
	}
	return n
}

func (g *logLines) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return strings.Join(g.l, "\n")
}

// The Telekom login of the tests: the '#' of the user name belongs to
// it; the password holds a '#', a blank and a quote.
const (
	telekomUser     = "002012345678#0001@t-online.de"
	telekomPassword = `pa#ss w"rd`
)

// telekomConfig is a configuration file as a Deutsche Telekom customer
// writes it for the lab's interfaces: VLAN 7, the user with its '#',
// the password quoted, comments after values.
const telekomConfig = `# pppfwd on a Deutsche Telekom line
backend         afpacket
workers         1
lan.interface   rlan
lan.address     192.168.77.1/24        # the router's LAN address
wan.interface   rwan
wan.vlan        7                      # Telekom's Internet VLAN
pppoe.user      002012345678#0001@t-online.de   # Anschlusskennung, T-Online-Nummer, #0001
pppoe.password  "pa#ss w\"rd"          # quoted: '#', a blank and a quote
pppoe.echo_interval 1s
control.socket  off
`

// TestIntegrationTelekomConfig: the router configured by a file's text,
// read by the parser `pppfwd run` uses, logs in to an AC that serves
// VLAN 7 and knows only the exact user and password, and the LAN host
// reaches the Internet host. A parser that cut a value at '#' (the
// user name, the password) or kept the quotes or the backslash would be
// refused.
func TestIntegrationTelekomConfig(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	nettest.RequireCmd(t, "ping")
	log := &logLines{t: t}
	l, err := Start(Options{Config: telekomConfig, VLAN: 7, User: telekomUser, Password: telekomPassword, Logf: log.logf})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := l.WaitUp(20 * time.Second); err != nil {
		t.Fatalf("%v; AC counters %+v", err, l.AC.Counters())
	}
	s := l.R.Engine().Session()
	if s.VLAN != 7 {
		t.Fatalf("session on VLAN %d, want 7", s.VLAN)
	}
	if ss := l.AC.Sessions(); len(ss) != 1 || ss[0].User != telekomUser {
		t.Fatalf("AC sessions %+v, want one of %q", ss, telekomUser)
	}
	if log.count(`pppoe: authenticated as "`+telekomUser+`"`) != 1 || log.count("rwan (VLAN 7)") == 0 {
		t.Fatalf("log lacks the login or the VLAN:\n%s", log)
	}
	out, err := l.Ping(RemoteAddr.String(), 3)
	if err != nil || !strings.Contains(out, " 0% packet loss") {
		t.Fatalf("ping through PPPoE: %v\n%s", err, out)
	}
	if got, err := l.UDPEcho(8, 10); err != nil || got != 80 {
		t.Fatalf("UDP echo: %d of 80 (%v); counters %+v", got, err, l.R.Engine().Totals())
	}
	if strings.Contains(log.String(), "pa#ss") {
		t.Fatalf("the password is in the log:\n%s", log)
	}
}

// TestIntegrationBringUpNoAC: with no AC on the line, the router's log
// says so within seconds: each PADI naming rwan and its VLAN (or that it
// is untagged), then "no PADO after 3 PADI" with what to check; the
// PADI lines stop after three (rate-limited, not one per PADI for
// ever), and the password never shows.
func TestIntegrationBringUpNoAC(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireCmd(t, "ip")
	for _, c := range []struct {
		name  string
		opt   Options
		where string
		hint  string
	}{
		{"untagged", Options{Password: "Tr0ub4dor#3", User: "lab"}, "rwan (untagged)",
			"whether the ISP needs a VLAN (wan.vlan; Deutsche Telekom: 7)"},
		{"telekom", Options{Config: telekomConfig}, "rwan (VLAN 7)",
			"check the VLAN id (wan.vlan) and the cable"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			log := &logLines{t: t}
			o := c.opt
			o.NoAC, o.Logf = true, log.logf
			start := time.Now()
			l, err := Start(o)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			// PADIs wait 1, 2, 4, 8 s (±25 %): the fifth goes out after
			// about 15 s, when the third PADO timeout has long been logged
			// and a fourth.
			for l.R.Client().Status().Counters.PADISent < 5 {
				if time.Since(start) > 25*time.Second {
					t.Fatalf("%d PADIs after %v:\n%s", l.R.Client().Status().Counters.PADISent, time.Since(start), log)
				}
				time.Sleep(50 * time.Millisecond)
			}
			for _, want := range []string{
				"pppoe: discovery: PADI 1 on " + c.where + ", waiting ",
				"pppoe: discovery: PADI 3 on " + c.where + ", waiting ",
				"pppoe: no PADO after 3 PADI on " + c.where + ": ",
				"pppoe: no PADO after 4 PADI on " + c.where + ": ",
			} {
				if log.count(want) != 1 {
					t.Errorf("%d lines with %q, want 1, in:\n%s", log.count(want), want, log)
				}
			}
			if n := log.count(c.hint); n != 2 {
				t.Errorf("%d lines say what to check (%q), want 2 (one per PADO timeout):\n%s", n, c.hint, log)
			}
			if n, sent := log.count("pppoe: discovery: PADI "), l.R.Client().Status().Counters.PADISent; n != 3 {
				t.Errorf("%d PADI lines for %d PADIs, want the first 3 only:\n%s", n, sent, log)
			}
			for _, secret := range []string{"Tr0ub4dor", "pa#ss", `w"rd`} {
				if strings.Contains(log.String(), secret) {
					t.Errorf("the password (%q) is in the log:\n%s", secret, log)
				}
			}
		})
	}
}
