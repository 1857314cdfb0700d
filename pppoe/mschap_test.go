package pppoe

import (
	"bytes"
	"encoding/hex"
	"strings"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMD4 checks the RFC 1320 test suite.
func TestMD4(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "31d6cfe0d16ae931b73c59d7e0c089c0"},
		{"a", "bde52cb31de33e46245e05fbdbd6fb24"},
		{"abc", "a448017aaf21d8525fc10ae87aa6729d"},
		{"message digest", "d9130a8164549fe818874806e1c7014b"},
		{"abcdefghijklmnopqrstuvwxyz", "d79e1c308aa5bbcdeea8ed63df412da9"},
		{"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", "043f8582f241db351ce627e153e7f0e4"},
		{"12345678901234567890123456789012345678901234567890123456789012345678901234567890", "e33b4ddc9c38f2199c3e7b164fcc0536"},
	} {
		got := md4([]byte(c.in))
		if hex.EncodeToString(got[:]) != c.want {
			t.Errorf("MD4(%q) = %x, want %s", c.in, got, c.want)
		}
	}
}

// TestMSCHAPv2Vectors checks every step against RFC 2759 section 9.2.
func TestMSCHAPv2Vectors(t *testing.T) {
	const user, pass = "User", "clientPass"
	authChal := unhex(t, "5B5D7C7D7B3F2F3E3C2C602132262628")
	peerChal := unhex(t, "21402324255E262A28295F2B3A337C7E")
	if ch := challengeHash(peerChal, authChal, user); hex.EncodeToString(ch[:]) != "d02e4386bce91226" {
		t.Errorf("ChallengeHash = %x", ch)
	}
	if ch := challengeHash(peerChal, authChal, `EXAMPLE\`+user); hex.EncodeToString(ch[:]) != "d02e4386bce91226" {
		t.Errorf("ChallengeHash with a domain prefix = %x, want the user's own", ch)
	}
	pw := ntPasswordHash(pass)
	if hex.EncodeToString(pw[:]) != "44ebba8d5312b8d611474411f56989ae" {
		t.Errorf("NtPasswordHash = %x", pw)
	}
	if hh := md4(pw[:]); hex.EncodeToString(hh[:]) != "41c00c584bd2d91c4017a2a12fa59f3f" {
		t.Errorf("PasswordHashHash = %x", hh)
	}
	nt := msv2NTResponse(authChal, peerChal, user, pass)
	if hex.EncodeToString(nt[:]) != "82309ecd8d708b5ea08faa3981cd83544233114a3d85d6df" {
		t.Errorf("NT-Response = %x", nt)
	}
	const wantS = "S=407A5589115FD0D6209F510FE9C04566932CDA56"
	if s := msv2AuthenticatorResponse(pass, nt, peerChal, authChal, user); s != wantS {
		t.Errorf("AuthenticatorResponse = %s, want %s", s, wantS)
	}
	for msg, ok := range map[string]bool{
		wantS: true, wantS + " M=Access granted": true, "s=407a5589115fd0d6209f510fe9c04566932cda56": true,
		wantS[:41]: false, wantS + "0": false, "S=407A5589115FD0D6209F510FE9C04566932CDA57 M=x": false, "": false,
	} {
		if got := msv2CheckSuccess([]byte(msg), wantS); got != ok {
			t.Errorf("msv2CheckSuccess(%q) = %v, want %v", msg, got, ok)
		}
	}
}

// TestMSCHAPv2SecondVector is an independent NT-Response vector (user and
// password "test01").
func TestMSCHAPv2SecondVector(t *testing.T) {
	nt := msv2NTResponse(unhex(t, "31149c19e0704707f4cff8635936e75f"), unhex(t, "6c8c217ca7fda182bb5662ad3e54de83"), "test01", "test01")
	if hex.EncodeToString(nt[:]) != "47563111af9b8a8414899dd62a0cb0966dab42e592e0013f" {
		t.Errorf("NT-Response = %x", nt)
	}
}

// FuzzMSCHAPv2 feeds arbitrary bytes to the two MS-CHAPv2 decoders: the
// client's check of a Success message and the server's check of a
// Response value. Neither panics; a Success passes only with the right
// authenticator response, a Response only when it is the right one
// (whatever its reserved bytes).
func FuzzMSCHAPv2(f *testing.F) {
	const user, pass = "User", "clientPass"
	authChal := []byte("\x5B\x5D\x7C\x7D\x7B\x3F\x2F\x3E\x3C\x2C\x60\x21\x32\x26\x26\x28")
	peerChal := []byte("\x21\x40\x23\x24\x25\x5E\x26\x2A\x28\x29\x5F\x2B\x3A\x33\x7C\x7E")
	nt := msv2NTResponse(authChal, peerChal, user, pass)
	want := msv2AuthenticatorResponse(pass, nt, peerChal, authChal, user)
	good := make([]byte, msv2ValueLen)
	copy(good, peerChal)
	copy(good[msv2NTResp:], nt[:])
	f.Add([]byte(want + " M=Access granted"))
	f.Add(good)
	f.Add([]byte("E=691 R=0 C=00 V=3"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ok := msv2CheckSuccess(b, want)
		// The first space-separated field is the authenticator response.
		ref := strings.EqualFold(strings.SplitN(string(b), " ", 2)[0], want)
		if ok != ref {
			t.Fatalf("msv2CheckSuccess(%q) = %v", b, ok)
		}
		l := &link{challenge: authChal}
		// The 8 reserved bytes are not checked (pppd does not either).
		right := len(b) == msv2ValueLen && bytes.Equal(b[:16], good[:16]) && bytes.Equal(b[msv2NTResp:], good[msv2NTResp:])
		if l.msv2Verify(b, user, pass) != right {
			t.Fatalf("msv2Verify(%x) disagrees with the one right response", b)
		}
	})
}
