package pppoe

import (
	"os"
	"path/filepath"
	"testing"
)

// TestStalePADTVLAN: the stale-session PADT goes to the persisted AC on
// the persisted VLAN, whatever the configuration says now; a record
// without a vlan line (older files) uses the configured VLAN; a record
// with a group or zero AC MAC sends nothing.
func TestStalePADTVLAN(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string
		cfgVLAN  uint16
		wantPADT bool
		wantVLAN uint16
	}{
		{"persisted vlan 7, configured none", "session 4660\nac 02:00:00:00:00:02\nlocal 02:00:00:00:00:01\nvlan 7\n", 0, true, 7},
		{"persisted untagged, configured 9", "session 4660\nac 02:00:00:00:00:02\nlocal 02:00:00:00:00:01\nvlan 0\n", 9, true, 0},
		{"old record without vlan, configured 9", "session 4660\nac 02:00:00:00:00:02\nlocal 02:00:00:00:00:01\n", 9, true, 9},
		{"crlf line ends", "session 4660\r\nac 02:00:00:00:00:02\r\nvlan 5\r\n", 0, true, 5},
		{"broadcast AC", "session 4660\nac ff:ff:ff:ff:ff:ff\nvlan 7\n", 0, false, 0},
		{"zero AC", "session 4660\nvlan 7\n", 0, false, 0},
		{"session 0", "session 0\nac 02:00:00:00:00:02\n", 0, false, 0},
		{"bad vlan", "session 4660\nac 02:00:00:00:00:02\nvlan 4096\n", 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "session")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			n, cn, c, _ := scriptedClient(t, func(c *ClientConfig) { c.StatePath, c.VLAN = path, tc.cfgVLAN })
			fs := n.framesFrom(cn)
			if got := fs[0].Code == CodePADT; got != tc.wantPADT || c.st.Counters.StalePADTSent != map[bool]uint64{true: 1}[tc.wantPADT] {
				t.Fatalf("PADT sent %v (%d counted), want %v", got, c.st.Counters.StalePADTSent, tc.wantPADT)
			}
			if tc.wantPADT {
				if fs[0].VLAN != tc.wantVLAN || fs[0].SessionID != 0x1234 || fs[0].Dst != [6]byte{2, 0, 0, 0, 0, 2} {
					t.Fatalf("PADT on vlan %d, session %#x, to %x", fs[0].VLAN, fs[0].SessionID, fs[0].Dst)
				}
				fs = fs[1:]
			}
			if fs[0].Code != CodePADI || fs[0].VLAN != tc.cfgVLAN {
				t.Fatalf("then %v on vlan %d", codeName(fs[0].Code), fs[0].VLAN)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Fatalf("record kept: %v", err)
			}
		})
	}
}

// TestStateFsync: a saved record is fsynced, and so is its directory
// after the rename; a removal syncs the directory.
func TestStateFsync(t *testing.T) {
	var synced []string
	defer func(f func(*os.File) error) { syncFile = f }(syncFile)
	syncFile = func(f *os.File) error {
		synced = append(synced, f.Name())
		return f.Sync()
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "session")
	if err := saveState(path, persisted{SessionID: 1, ACMAC: [6]byte{2, 0, 0, 0, 0, 2}, VLAN: 3}); err != nil {
		t.Fatal(err)
	}
	if len(synced) != 2 || filepath.Dir(synced[0]) != dir || synced[0] == dir || synced[1] != dir {
		t.Fatalf("synced %q, want the temp file then %s", synced, dir)
	}
	if p, err := loadState(path); err != nil || p.SessionID != 1 || p.VLAN != 3 || !p.VLANKnown {
		t.Fatalf("loaded %+v, %v", p, err)
	}
	removeState(path)
	if len(synced) != 3 || synced[2] != dir {
		t.Fatalf("removal synced %q", synced[2:])
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("left %v", ents)
	}
}

// FuzzStateParse: the state parser never panics; what it accepts has a
// 12-bit VLAN and survives a format/parse round trip.
func FuzzStateParse(f *testing.F) {
	f.Add([]byte("session 4660\nac 02:00:00:00:00:02\nlocal 02:00:00:00:00:01\nvlan 7\n"))
	f.Add([]byte("session 1\nac 02:00:00:00:00:02\n"))
	f.Add([]byte("session 65536\n"))
	f.Add([]byte("vlan 4095\r\nac 2:0:0:0:0:2\r\n"))
	f.Add([]byte("ac 02:00:00:00:00\nbogus line\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parseState(b)
		if err != nil {
			return
		}
		if p.VLAN > 0xfff || (!p.VLANKnown && p.VLAN != 0) {
			t.Fatalf("vlan %d (known %v)", p.VLAN, p.VLANKnown)
		}
		q, err := parseState([]byte(formatState(p)))
		p.VLANKnown = true // formatState always writes the vlan line
		if err != nil || q != p {
			t.Fatalf("round trip: %+v -> %+v, %v", p, q, err)
		}
	})
}
