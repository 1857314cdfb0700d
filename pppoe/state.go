package pppoe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// persisted is the stale-session record kept at ClientConfig.StatePath:
// the session a PADT must release if the process dies without sending
// one.
type persisted struct {
	SessionID uint16
	ACMAC     [6]byte
	LocalMAC  [6]byte
	VLAN      uint16
	// VLANKnown: the record had a vlan line (files written before it
	// existed have none: the configured VLAN is the best guess then).
	VLANKnown bool
}

func macString(m [6]byte) string {
	return fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5])
}

func parseMAC(s string) ([6]byte, error) {
	var m [6]byte
	parts := strings.Split(s, ":")
	if len(parts) != 6 {
		return m, fmt.Errorf("bad MAC %q", s)
	}
	for i, p := range parts {
		v, err := strconv.ParseUint(p, 16, 8)
		if err != nil {
			return m, fmt.Errorf("bad MAC %q", s)
		}
		m[i] = byte(v)
	}
	return m, nil
}

// syncFile is (*os.File).Sync; tests count the calls.
var syncFile = (*os.File).Sync

// formatState is the file form of p: one "key value" line per field.
func formatState(p persisted) string {
	return fmt.Sprintf("session %d\nac %s\nlocal %s\nvlan %d\n", p.SessionID, macString(p.ACMAC), macString(p.LocalMAC), p.VLAN)
}

// saveState writes the record atomically and durably: a temp file in the
// same directory, fsynced, renamed over path, then the directory fsynced,
// so that after a crash path holds either the old record or the new one.
func saveState(path string, p persisted) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pppoe-state-*")
	if err != nil {
		return err
	}
	_, err = tmp.WriteString(formatState(p))
	if err == nil {
		err = syncFile(tmp)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir fsyncs directory dir (a rename or removal in it is durable).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = syncFile(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

func loadState(path string) (persisted, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return persisted{}, err
	}
	p, err := parseState(b)
	if err != nil {
		return p, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// parseState reads the file form of a record. Unknown keys and lines
// without a value are skipped; a bad value is an error.
func parseState(b []byte) (persisted, error) {
	var p persisted
	var err error
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch k {
		case "session":
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return p, fmt.Errorf("bad session %q", v)
			}
			p.SessionID = uint16(n)
		case "ac":
			if p.ACMAC, err = parseMAC(v); err != nil {
				return p, err
			}
		case "local":
			if p.LocalMAC, err = parseMAC(v); err != nil {
				return p, err
			}
		case "vlan":
			n, err := strconv.ParseUint(v, 10, 12)
			if err != nil {
				return p, fmt.Errorf("bad vlan %q", v)
			}
			p.VLAN, p.VLANKnown = uint16(n), true
		}
	}
	return p, nil
}

// removeState removes the record, durably (best effort: a record that
// survives a crash only costs a PADT for a session that is gone).
func removeState(path string) {
	if err := os.Remove(path); err == nil {
		_ = syncDir(filepath.Dir(path))
	}
}
