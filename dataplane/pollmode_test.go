package dataplane

import "testing"

// TestParsePollMode: every policy's word reads back to it; others fail.
func TestParsePollMode(t *testing.T) {
	for _, m := range []PollMode{PollAdaptive, PollBusy, PollBlock} {
		if got, err := ParsePollMode(m.String()); err != nil || got != m {
			t.Errorf("ParsePollMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	for _, s := range []string{"", "spin", "Busy"} {
		if _, err := ParsePollMode(s); err == nil {
			t.Errorf("ParsePollMode(%q) did not fail", s)
		}
	}
}
