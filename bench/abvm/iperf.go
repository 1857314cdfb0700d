package abvm

import (
	"encoding/json"
	"errors"
	"fmt"
)

// iperfResult is what the TCP step takes from an iperf3 client's --json
// report.
type iperfResult struct {
	// Mbps is the goodput the receiver counted (end.sum_received), over
	// the measured seconds (the omitted pre-test excluded).
	Mbps    float64
	Seconds float64
	// Retransmits are the sender's (end.sum_sent.retransmits: with -R
	// the server's, which iperf3 passes back to the client).
	Retransmits int
	Streams     int  // start.test_start.num_streams
	Reverse     bool // start.test_start.reverse: the server sent (down)
}

// iperfJSON is the part of iperf3's --json output read here.
type iperfJSON struct {
	Start struct {
		TestStart struct {
			Protocol   string `json:"protocol"`
			NumStreams int    `json:"num_streams"`
			Reverse    int    `json:"reverse"`
		} `json:"test_start"`
	} `json:"start"`
	End struct {
		SumSent struct {
			Seconds     float64 `json:"seconds"`
			Bytes       float64 `json:"bytes"`
			Retransmits *int    `json:"retransmits"`
		} `json:"sum_sent"`
		SumReceived struct {
			Seconds       float64  `json:"seconds"`
			Bytes         float64  `json:"bytes"`
			BitsPerSecond *float64 `json:"bits_per_second"`
		} `json:"sum_received"`
	} `json:"end"`
	Error string `json:"error"`
}

// parseIperf3 reads an iperf3 client's --json report of a TCP test. A
// report with an "error" member (iperf3 writes one when the test fails)
// or without the received sum is an error.
func parseIperf3(b []byte) (iperfResult, error) {
	var j iperfJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return iperfResult{}, fmt.Errorf("iperf3 JSON: %w", err)
	}
	if j.Error != "" {
		return iperfResult{}, fmt.Errorf("iperf3: %s", j.Error)
	}
	if p := j.Start.TestStart.Protocol; p != "TCP" {
		return iperfResult{}, fmt.Errorf("iperf3: protocol %q, want TCP", p)
	}
	bps := j.End.SumReceived.BitsPerSecond
	if bps == nil {
		return iperfResult{}, errors.New("iperf3: no end.sum_received.bits_per_second")
	}
	if *bps < 0 || j.End.SumReceived.Seconds <= 0 {
		return iperfResult{}, fmt.Errorf("iperf3: received %v bit/s over %v s", *bps, j.End.SumReceived.Seconds)
	}
	r := iperfResult{Mbps: *bps / 1e6, Seconds: j.End.SumReceived.Seconds,
		Streams: j.Start.TestStart.NumStreams, Reverse: j.Start.TestStart.Reverse != 0}
	if j.End.SumSent.Retransmits != nil {
		r.Retransmits = *j.End.SumSent.Retransmits
	}
	return r, nil
}
