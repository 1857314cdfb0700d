package pppoe

import (
	"encoding/binary"
	"time"
)

// fsmState is an RFC 1661 section 4.2 automaton state.
type fsmState uint8

const (
	stInitial fsmState = iota
	stStarting
	stClosed
	stStopped
	stClosing
	stStopping
	stReqSent
	stAckRcvd
	stAckSent
	stOpened
)

var fsmStateNames = [...]string{"Initial", "Starting", "Closed", "Stopped", "Closing", "Stopping", "Req-Sent", "Ack-Rcvd", "Ack-Sent", "Opened"}

func (s fsmState) String() string { return fsmStateNames[s] }

// fsmHandler is the protocol-specific part of an automaton (LCP, IPCP,
// IPv6CP): the options it asks for and how it judges the peer's.
type fsmHandler interface {
	// addCI appends our Configure-Request options.
	addCI(b []byte) []byte
	// nakCI / rejCI apply a Configure-Nak / Configure-Reject of ours.
	nakCI(opts []Option)
	rejCI(opts []Option)
	// reqCI judges the peer's Configure-Request options and appends the
	// reply options to out: ConfAck (out = the request), ConfNak or
	// ConfRej. rejectOnly turns every Nak into a Reject (Max-Failure).
	reqCI(opts []Option, raw []byte, out []byte, rejectOnly bool) (uint8, []byte)
	up()
	down()
	finished(reason string)
	// extCode handles codes beyond 1..7; false means Code-Reject it.
	extCode(p ControlPacket) bool
}

const (
	maxTerminate = 2
	maxFailure   = 5
)

// fsm is the RFC 1661 option negotiation automaton shared by LCP, IPCP
// and IPv6CP, in both client and server roles.
type fsm struct {
	l      *link
	proto  uint16
	h      fsmHandler
	state  fsmState
	id     uint8 // identifier of the last packet we originated
	reqID  uint8 // identifier of our outstanding Configure-Request
	count  int   // restart counter
	timer  time.Time
	naks   int // consecutive Naks sent (Max-Failure)
	reason string
	// peerID is the Identifier of the peer's Configure-Request that
	// reqCI is judging (or judged last).
	peerID uint8
}

func (f *fsm) irc(terminate bool) {
	if terminate {
		f.count = maxTerminate
	} else {
		f.count = f.l.cfg.maxConfigure
	}
}

func (f *fsm) setTimer() { f.timer = f.l.now.Add(f.l.cfg.restart) }

func (f *fsm) scr() {
	f.id++
	f.reqID = f.id
	b := append(f.l.scratch[:0], ConfReq, f.id, 0, 0)
	b = f.h.addCI(b)
	f.l.sendControl(f.proto, b)
	f.count--
	f.setTimer()
}

func (f *fsm) str() {
	f.id++
	b := append(f.l.scratch[:0], TermReq, f.id, 0, 0)
	b = append(b, f.reason...)
	f.l.sendControl(f.proto, b)
	f.count--
	f.setTimer()
}

func (f *fsm) sta(id uint8) {
	f.l.sendControl(f.proto, append(f.l.scratch[:0], TermAck, id, 0, 0))
}

func (f *fsm) tlu() { f.timer = time.Time{}; f.h.up() }
func (f *fsm) tld() { f.h.down() }
func (f *fsm) tlf() { f.timer = time.Time{}; f.h.finished(f.reason) }

// Up is the lower-layer-up event.
func (f *fsm) Up() {
	switch f.state {
	case stInitial:
		f.state = stClosed
	case stStarting:
		f.irc(false)
		f.scr()
		f.state = stReqSent
	}
}

// Down is the lower-layer-down event.
func (f *fsm) Down() {
	f.timer = time.Time{}
	switch f.state {
	case stClosed, stClosing:
		f.state = stInitial
	case stStopped, stStopping, stReqSent, stAckRcvd, stAckSent:
		f.state = stStarting
	case stOpened:
		f.tld()
		f.state = stStarting
	}
}

// Open is the administrative open event.
func (f *fsm) Open() {
	switch f.state {
	case stInitial:
		f.state = stStarting
	case stClosed:
		f.irc(false)
		f.scr()
		f.state = stReqSent
	case stClosing:
		f.state = stStopping
	}
}

// Close is the administrative close event.
func (f *fsm) Close(reason string) {
	f.reason = reason
	switch f.state {
	case stStarting:
		f.state = stInitial
		f.tlf()
	case stStopped:
		f.state = stClosed
	case stStopping:
		f.state = stClosing
	case stReqSent, stAckRcvd, stAckSent:
		f.irc(true)
		f.str()
		f.state = stClosing
	case stOpened:
		f.tld()
		f.irc(true)
		f.str()
		f.state = stClosing
	}
}

// timeout handles an expired restart timer.
func (f *fsm) timeout() {
	f.timer = time.Time{}
	if f.count > 0 {
		switch f.state {
		case stClosing, stStopping:
			f.str()
		case stReqSent, stAckRcvd:
			f.scr()
			f.state = stReqSent
		case stAckSent:
			f.scr()
		}
		return
	}
	switch f.state {
	case stClosing:
		f.state = stClosed
		f.tlf()
	case stStopping:
		f.state = stStopped
		f.tlf()
	case stReqSent, stAckRcvd, stAckSent:
		if f.reason == "" {
			f.reason = "negotiation timed out"
		}
		f.state = stStopped
		f.tlf()
	}
}

// input processes one control packet of this protocol.
func (f *fsm) input(p ControlPacket, raw []byte) {
	switch p.Code {
	case ConfReq:
		f.rcr(p)
	case ConfAck:
		if p.ID != f.reqID || !f.ackMatches(p.Data) {
			return
		}
		f.rca()
	case ConfNak, ConfRej:
		if p.ID != f.reqID {
			return
		}
		opts, err := ParseOptions(p.Data)
		if err != nil {
			return
		}
		switch f.state {
		case stClosed, stStopped:
			f.sta(p.ID)
			return
		case stClosing, stStopping:
			return
		}
		if p.Code == ConfNak {
			f.h.nakCI(opts)
		} else {
			f.h.rejCI(opts)
		}
		switch f.state {
		case stReqSent:
			f.irc(false)
			f.scr()
		case stAckRcvd:
			f.scr()
			f.state = stReqSent
		case stAckSent:
			f.irc(false)
			f.scr()
		case stOpened:
			f.tld()
			f.scr()
			f.state = stReqSent
		}
	case TermReq:
		switch f.state {
		case stAckRcvd, stAckSent:
			f.state = stReqSent
		case stOpened:
			f.reason = "peer requested termination"
			if len(p.Data) > 0 {
				f.reason += ": " + printable(p.Data)
			}
			f.tld()
			f.count = 0
			f.setTimer()
			f.state = stStopping
		}
		f.sta(p.ID)
	case TermAck:
		switch f.state {
		case stClosing:
			f.state = stClosed
			f.tlf()
		case stStopping:
			f.state = stStopped
			f.tlf()
		case stAckRcvd:
			f.state = stReqSent
		case stOpened:
			f.tld()
			f.scr()
			f.state = stReqSent
		}
	case CodeRej:
		if len(p.Data) >= 1 && p.Data[0] >= ConfReq && p.Data[0] <= CodeRej {
			f.rxjMinus("peer rejected code " + itoa(int(p.Data[0])))
			return
		}
		if f.state == stAckRcvd {
			f.state = stReqSent
		}
		if f.proto == pppLCP && len(p.Data) >= 1 && (p.Data[0] == EchoReq) {
			f.l.echoRejected = true
		}
	default:
		if f.state == stOpened && f.h.extCode(p) {
			return
		}
		if p.Code >= ProtoRej && p.Code <= DiscReq && f.proto == pppLCP {
			return // LCP codes outside Opened are silently discarded
		}
		f.scj(raw)
	}
}

func (f *fsm) scj(raw []byte) {
	f.id++
	b := append(f.l.scratch[:0], CodeRej, f.id, 0, 0)
	max := f.l.peerMRU() - lcpHdrLen
	if len(raw) > max {
		raw = raw[:max]
	}
	b = append(b, raw...)
	f.l.sendControl(f.proto, b)
	f.l.counters.codeRejects++
}

func (f *fsm) rxjMinus(reason string) {
	f.reason = reason
	switch f.state {
	case stClosed, stStopped:
		f.tlf()
	case stClosing:
		f.state = stClosed
		f.tlf()
	case stStopping, stReqSent, stAckRcvd, stAckSent:
		f.state = stStopped
		f.tlf()
	case stOpened:
		f.tld()
		f.irc(true)
		f.str()
		f.state = stStopping
	}
}

func (f *fsm) ackMatches(data []byte) bool {
	want := f.h.addCI(f.l.scratch2[:0])
	return string(want) == string(data)
}

func (f *fsm) rcr(p ControlPacket) {
	switch f.state {
	case stClosed:
		f.sta(p.ID)
		return
	case stClosing, stStopping:
		return
	}
	opts, err := ParseOptions(p.Data)
	out := append(f.l.reply[:0], 0, p.ID, 0, 0)
	f.peerID = p.ID
	var code uint8
	if err != nil {
		code = ConfRej
		out = append(out, p.Data...)
	} else {
		code, out = f.h.reqCI(opts, p.Data, out, f.naks >= maxFailure)
	}
	out[0] = code
	if code == ConfNak {
		f.naks++
	} else if code == ConfAck {
		f.naks = 0
	}
	ack := code == ConfAck
	switch f.state {
	case stStopped:
		f.irc(false)
		f.scr()
		f.sendReply(out)
		f.state = pick(ack, stAckSent, stReqSent)
	case stReqSent:
		f.sendReply(out)
		f.state = pick(ack, stAckSent, stReqSent)
	case stAckRcvd:
		f.sendReply(out)
		if ack {
			f.state = stOpened
			f.tlu()
		}
	case stAckSent:
		f.sendReply(out)
		f.state = pick(ack, stAckSent, stReqSent)
	case stOpened:
		f.tld()
		f.scr()
		f.sendReply(out)
		f.state = pick(ack, stAckSent, stReqSent)
	}
}

func (f *fsm) sendReply(out []byte) {
	f.l.sendControl(f.proto, out)
}

func (f *fsm) rca() {
	switch f.state {
	case stClosed, stStopped:
		f.sta(f.reqID)
	case stReqSent:
		f.irc(false)
		f.timer = time.Time{}
		f.state = stAckRcvd
		// The restart timer keeps running for the peer's request.
		f.setTimer()
	case stAckRcvd:
		f.scr()
		f.state = stReqSent
	case stAckSent:
		f.irc(false)
		f.state = stOpened
		f.tlu()
	case stOpened:
		f.tld()
		f.scr()
		f.state = stReqSent
	}
}

func pick(c bool, a, b fsmState) fsmState {
	if c {
		return a
	}
	return b
}

func printable(b []byte) string {
	r := make([]byte, 0, len(b))
	for _, c := range b {
		if c >= 0x20 && c < 0x7f {
			r = append(r, c)
		} else {
			r = append(r, '?')
		}
	}
	return string(r)
}

func itoa(v int) string {
	var b [20]byte
	i := len(b)
	neg := v < 0
	if neg {
		v = -v
	}
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

func be16(b []byte) uint16 { return binary.BigEndian.Uint16(b) }
func be32(b []byte) uint32 { return binary.BigEndian.Uint32(b) }
