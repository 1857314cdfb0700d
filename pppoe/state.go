package pppoe

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// persisted is the stale-session record kept at ClientConfig.StatePath.
type persisted struct {
	SessionID uint16
	ACMAC     [6]byte
	LocalMAC  [6]byte
	VLAN      uint16
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

// saveState writes the record atomically (temp file + rename).
func saveState(path string, p persisted) error {
	s := fmt.Sprintf("session %d\nac %s\nlocal %s\nvlan %d\n", p.SessionID, macString(p.ACMAC), macString(p.LocalMAC), p.VLAN)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pppoe-state-*")
	if err != nil {
		return err
	}
	if _, err := tmp.WriteString(s); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func loadState(path string) (persisted, error) {
	var p persisted
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if !ok {
			continue
		}
		switch k {
		case "session":
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil {
				return p, fmt.Errorf("%s: bad session %q", path, v)
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
				return p, fmt.Errorf("%s: bad vlan %q", path, v)
			}
			p.VLAN = uint16(n)
		}
	}
	return p, nil
}

func removeState(path string) { _ = os.Remove(path) }
