package pppoe

// The authentication phase of a link, client and server side: PAP
// (RFC 1334), CHAP-MD5 (RFC 1994) and MS-CHAPv2 (RFC 2759, computed in
// mschap.go), with the server's offer order, retransmission and timeout.

import (
	"bytes"
	"crypto/md5"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"strings"
	"time"
)

func (l *link) authStart() {
	l.authTries = 0
	l.authDead = l.now.Add(l.cfg.authTimeout)
	// Nothing of an earlier authentication phase (an LCP restart in the
	// same session) may answer for this one.
	l.challenge, l.succMsg = l.challenge[:0], nil
	l.peerChal, l.ntResp = [16]byte{}, [24]byte{}
	l.chapAnswered = false
	switch {
	case l.cfg.role == roleClient && l.authProto == pppPAP:
		l.authRetransmit()
	case l.cfg.role == roleServer && l.authProto == pppCHAP:
		l.challenge = make([]byte, 16)
		for i := 0; i < 16; i += 8 {
			binary.BigEndian.PutUint64(l.challenge[i:], l.cfg.rand())
		}
		l.authRetransmit()
	}
}

// authRetransmit (re)sends a PAP request (client) or CHAP challenge
// (server).
func (l *link) authRetransmit() {
	if l.authDone || l.peerAuthOK {
		return
	}
	if l.authTries >= authRetries {
		l.failAuth("no authentication response", false)
		return
	}
	l.authTries++
	l.authID++
	switch {
	case l.cfg.role == roleClient && l.authProto == pppPAP:
		out := append(l.scratch[:0], PAPReq, l.authID, 0, 0)
		out = PAPRequest{[]byte(l.cfg.user), []byte(l.cfg.pass)}.Append(out)
		l.sendControl(pppPAP, out)
	case l.cfg.role == roleServer && l.authProto == pppCHAP:
		out := append(l.scratch[:0], CHAPChal, l.authID, 0, 0)
		out = CHAPValue{l.challenge, []byte(l.cfg.name)}.Append(out)
		l.sendControl(pppCHAP, out)
	default:
		return
	}
	l.authTimer = l.now.Add(l.cfg.restart)
}

// authOrder is the order in which a server offers protocols.
var authOrder = [...]struct {
	proto uint16
	alg   uint8
	set   AuthProto
}{{pppCHAP, chapMD5, AuthCHAPMD5}, {pppCHAP, chapMSv2, AuthMSCHAPv2}, {pppPAP, 0, AuthPAP}}

// nextAuth returns the protocol in auth that follows (proto, alg) in
// authOrder; ok is false when there is none.
func nextAuth(proto uint16, alg uint8, auth AuthProto) (uint16, uint8, bool) {
	i := 0
	for i < len(authOrder) && (authOrder[i].proto != proto || authOrder[i].alg != alg) {
		i++
	}
	for i++; i < len(authOrder); i++ {
		if auth&authOrder[i].set != 0 {
			return authOrder[i].proto, authOrder[i].alg, true
		}
	}
	return proto, alg, false
}

// unknownUserSecret stands in for an unknown user's secret so that the
// server does the same work as for a known one.
const unknownUserSecret = "\x00pppfwd: no such user"

// chapAllowed reports whether CHAP algorithm alg is in auth.
func chapAllowed(alg uint8, auth AuthProto) bool {
	return (alg == chapMD5 && auth&AuthCHAPMD5 != 0) || (alg == chapMSv2 && auth&AuthMSCHAPv2 != 0)
}

func chapMD5Response(id uint8, secret string, challenge []byte) [16]byte {
	h := md5.New()
	h.Write([]byte{id})
	h.Write([]byte(secret))
	h.Write(challenge)
	var r [16]byte
	h.Sum(r[:0])
	return r
}

func (l *link) authInput(proto uint16, p ControlPacket) {
	if l.cfg.role == roleClient {
		l.clientAuthInput(proto, p)
	} else {
		l.serverAuthInput(proto, p)
	}
}

func (l *link) clientAuthInput(proto uint16, p ControlPacket) {
	switch {
	case proto == pppCHAP && p.Code == CHAPChal:
		v, err := ParseCHAPValue(p.Data)
		if err != nil {
			return
		}
		out := append(l.scratch[:0], CHAPResp, p.ID, 0, 0)
		if l.authAlg == chapMSv2 {
			if len(v.Value) != 16 {
				return
			}
			// A retransmitted challenge (same id) gets the same answer.
			if p.ID != l.authID || l.ntResp == [24]byte{} || !bytes.Equal(v.Value, l.challenge) {
				binary.BigEndian.PutUint64(l.peerChal[0:], l.cfg.rand())
				binary.BigEndian.PutUint64(l.peerChal[8:], l.cfg.rand())
				l.ntResp = msv2NTResponse(v.Value, l.peerChal[:], l.cfg.user, l.cfg.pass)
				l.challenge = append(l.challenge[:0], v.Value...)
			}
			var val [msv2ValueLen]byte
			copy(val[msv2PeerChal:], l.peerChal[:])
			copy(val[msv2NTResp:], l.ntResp[:])
			out = CHAPValue{val[:], []byte(l.cfg.user)}.Append(out)
		} else {
			r := chapMD5Response(p.ID, l.cfg.pass, v.Value)
			out = CHAPValue{r[:], []byte(l.cfg.user)}.Append(out)
		}
		l.authID = p.ID
		l.chapAnswered = true
		l.sendControl(pppCHAP, out)
	case proto == pppCHAP && (p.Code == CHAPSucc || p.Code == CHAPFail):
		if !l.chapAnswered || p.ID != l.authID {
			return
		}
		msg := printable(p.Data)
		if p.Code == CHAPFail {
			l.failAuth("authentication failed (CHAP): "+msg, true)
			return
		}
		if l.authAlg == chapMSv2 {
			// Mutual authentication: the server must prove it knows the
			// password too.
			want := msv2AuthenticatorResponse(l.cfg.pass, l.ntResp, l.peerChal[:], l.challenge, l.cfg.user)
			if !msv2CheckSuccess(p.Data, want) {
				l.failAuth("MS-CHAPv2: the server's authenticator response is wrong: "+msg, true)
				return
			}
		}
		l.authSucceeded(msg)
	case proto == pppPAP && (p.Code == PAPAck || p.Code == PAPNak):
		if p.ID != l.authID {
			return
		}
		m, _ := ParsePAPMessage(p.Data)
		if p.Code == PAPNak {
			l.failAuth("authentication failed (PAP): "+printable(m), true)
			return
		}
		l.authSucceeded(printable(m))
	}
}

func (l *link) serverAuthInput(proto uint16, p ControlPacket) {
	var user string
	var ok bool
	switch {
	case proto == pppCHAP && p.Code == CHAPResp:
		if p.ID != l.authID {
			return
		}
		v, err := ParseCHAPValue(p.Data)
		if err != nil {
			return
		}
		user = string(v.Name)
		if l.peerAuthOK {
			ok = user == l.user
		} else {
			// The same work for an unknown user: the answer's timing must
			// not tell which user names exist.
			secret, known := l.cfg.users[user]
			if !known {
				secret = unknownUserSecret
			}
			if l.authAlg == chapMSv2 {
				ok = l.msv2Verify(v.Value, user, secret) && known
			} else {
				want := chapMD5Response(p.ID, secret, l.challenge)
				ok = subtle.ConstantTimeCompare(want[:], v.Value) == 1 && known
			}
		}
		code, msg := CHAPSucc, []byte("Access granted")
		switch {
		case !ok && l.authAlg == chapMSv2:
			// RFC 2759 section 6: E=691 (authentication failure), no retry.
			code, msg = CHAPFail, []byte("E=691 R=0 C="+strings.ToUpper(hex.EncodeToString(l.challenge))+" V=3 M=Authentication failed")
		case !ok:
			code, msg = CHAPFail, []byte("Authentication failed")
		case l.authAlg == chapMSv2:
			msg = l.succMsg
		}
		out := append(l.scratch[:0], code, p.ID, 0, 0)
		out = append(out, msg...)
		l.sendControl(pppCHAP, out)
	case proto == pppPAP && p.Code == PAPReq:
		r, err := ParsePAPRequest(p.Data)
		if err != nil {
			return
		}
		user = string(r.PeerID)
		secret, known := l.cfg.users[user]
		ok = known && subtle.ConstantTimeCompare([]byte(secret), r.Password) == 1
		code, msg := PAPAck, "Login ok"
		if !ok {
			code, msg = PAPNak, "Login incorrect"
		}
		out := append(l.scratch[:0], code, p.ID, 0, 0)
		out = appendLV(out, []byte(msg))
		l.sendControl(pppPAP, out)
	default:
		return
	}
	if l.peerAuthOK {
		return // retransmitted response after success
	}
	if !ok {
		l.failAuth("authentication failed for user "+printable([]byte(user)), true)
		return
	}
	l.user = user
	l.authSucceeded("")
}

// msv2Verify checks an MS-CHAPv2 Response value against the password
// and, when it matches, keeps the Success message with the authenticator
// response.
func (l *link) msv2Verify(val []byte, user, password string) bool {
	if len(val) != msv2ValueLen || val[msv2Flags] != 0 {
		return false
	}
	peerChal := val[msv2PeerChal : msv2PeerChal+16]
	want := msv2NTResponse(l.challenge, peerChal, user, password)
	if subtle.ConstantTimeCompare(want[:], val[msv2NTResp:msv2NTResp+24]) != 1 {
		return false
	}
	l.succMsg = []byte(msv2AuthenticatorResponse(password, want, peerChal, l.challenge, user) + " M=Access granted")
	return true
}

func (l *link) failAuth(msg string, wrong bool) {
	l.authTimer, l.authDead = time.Time{}, time.Time{}
	l.authFailed = wrong
	l.authMsg = msg
	l.owner.authResult(false, l.user, msg)
	l.close(msg)
}

func (l *link) authSucceeded(msg string) {
	l.authTimer, l.authDead = time.Time{}, time.Time{}
	if l.cfg.role == roleClient {
		l.authDone = true
	} else {
		l.peerAuthOK = true
	}
	l.authMsg = msg
	l.owner.authResult(true, l.user, msg)
	if l.phase == phaseAuth {
		l.networkPhase()
	}
}
