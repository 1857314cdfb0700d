package natbench

import (
	"encoding/json"
	"testing"
)

func TestRun(t *testing.T) {
	r, err := Run(4096)
	if err != nil {
		t.Fatal(err)
	}
	if r.Entries != 4096 || r.Flows == 0 || r.Flows > r.Entries {
		t.Fatalf("result %+v", r)
	}
	for name, v := range map[string]float64{"lookup": r.LookupNs, "insert": r.InsertNs, "expire": r.ExpireNs, "outbound": r.OutboundNs, "inbound": r.InboundNs} {
		if v <= 0 {
			t.Errorf("%s_ns = %v", name, v)
		}
	}
	if r.TableBytes <= r.FixedBytes || r.BytesPerEntry != float64(r.TableBytes)/float64(r.Entries) {
		t.Fatalf("memory %+v", r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"entries", "lookup_ns", "insert_ns", "expire_ns", "bytes_per_entry", "outbound_ns", "inbound_ns"} {
		if _, ok := m[k]; !ok {
			t.Errorf("json lacks %q: %s", k, b)
		}
	}
	if _, err := Run(1); err == nil {
		t.Fatal("Run(1) accepted")
	}
}

// BenchmarkRun64k reports the 64k-entry figures (CI smoke: -benchtime=1x).
func BenchmarkRun64k(b *testing.B) {
	for b.Loop() {
		r, err := Run(1 << 16)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(r.LookupNs, "lookup_ns")
		b.ReportMetric(r.InsertNs, "insert_ns")
		b.ReportMetric(r.ExpireNs, "expire_ns")
		b.ReportMetric(r.OutboundNs, "outbound_ns")
		b.ReportMetric(r.InboundNs, "inbound_ns")
		b.ReportMetric(r.BytesPerEntry, "bytes/entry")
	}
}
