package pppoe

// MS-CHAPv2 (RFC 2759): the response a peer computes from the
// authenticator's challenge and its password, and the authenticator
// response ("S=...") that proves the authenticator knew the password too.
// MD4 (RFC 1320), which only NtPasswordHash uses, is written out here:
// the standard library does not have it.

import (
	"crypto/des"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"math/bits"
	"strings"
	"unicode/utf16"
)

// MS-CHAPv2 Response value: peer challenge, 8 reserved zero bytes, the NT
// response, flags (RFC 2759 section 4).
const (
	msv2ValueLen = 49
	msv2PeerChal = 0
	msv2NTResp   = 24
	msv2Flags    = 48
)

// md4 returns the MD4 digest of msg (RFC 1320).
func md4(msg []byte) [16]byte {
	a, b, c, d := uint32(0x67452301), uint32(0xefcdab89), uint32(0x98badcfe), uint32(0x10325476)
	padded := append(append(make([]byte, 0, len(msg)+72), msg...), 0x80)
	for len(padded)%64 != 56 {
		padded = append(padded, 0)
	}
	padded = binary.LittleEndian.AppendUint64(padded, uint64(len(msg))*8)
	var x [16]uint32
	for off := 0; off < len(padded); off += 64 {
		for i := range x {
			x[i] = binary.LittleEndian.Uint32(padded[off+4*i:])
		}
		aa, bb, cc, dd := a, b, c, d
		for _, i := range [4]int{0, 4, 8, 12} { // round 1: F = x&y | ^x&z
			a = bits.RotateLeft32(a+(b&c|^b&d)+x[i], 3)
			d = bits.RotateLeft32(d+(a&b|^a&c)+x[i+1], 7)
			c = bits.RotateLeft32(c+(d&a|^d&b)+x[i+2], 11)
			b = bits.RotateLeft32(b+(c&d|^c&a)+x[i+3], 19)
		}
		for _, i := range [4]int{0, 1, 2, 3} { // round 2: G = majority
			a = bits.RotateLeft32(a+(b&c|b&d|c&d)+x[i]+0x5a827999, 3)
			d = bits.RotateLeft32(d+(a&b|a&c|b&c)+x[i+4]+0x5a827999, 5)
			c = bits.RotateLeft32(c+(d&a|d&b|a&b)+x[i+8]+0x5a827999, 9)
			b = bits.RotateLeft32(b+(c&d|c&a|d&a)+x[i+12]+0x5a827999, 13)
		}
		for _, i := range [4]int{0, 2, 1, 3} { // round 3: H = x^y^z
			a = bits.RotateLeft32(a+(b^c^d)+x[i]+0x6ed9eba1, 3)
			d = bits.RotateLeft32(d+(a^b^c)+x[i+8]+0x6ed9eba1, 9)
			c = bits.RotateLeft32(c+(d^a^b)+x[i+4]+0x6ed9eba1, 11)
			b = bits.RotateLeft32(b+(c^d^a)+x[i+12]+0x6ed9eba1, 15)
		}
		a, b, c, d = a+aa, b+bb, c+cc, d+dd
	}
	var out [16]byte
	binary.LittleEndian.PutUint32(out[0:], a)
	binary.LittleEndian.PutUint32(out[4:], b)
	binary.LittleEndian.PutUint32(out[8:], c)
	binary.LittleEndian.PutUint32(out[12:], d)
	return out
}

// ntPasswordHash is MD4 over the password in UTF-16LE.
func ntPasswordHash(password string) [16]byte {
	u := utf16.Encode([]rune(password))
	b := make([]byte, 2*len(u))
	for i, c := range u {
		binary.LittleEndian.PutUint16(b[2*i:], c)
	}
	return md4(b)
}

// challengeHash is the first 8 bytes of SHA-1(peer challenge, authenticator
// challenge, user name without a "DOMAIN\" prefix).
func challengeHash(peerChal, authChal []byte, user string) [8]byte {
	if i := strings.LastIndexByte(user, '\\'); i >= 0 {
		user = user[i+1:]
	}
	h := sha1.New()
	h.Write(peerChal)
	h.Write(authChal)
	h.Write([]byte(user))
	var s [sha1.Size]byte
	return [8]byte(h.Sum(s[:0]))
}

// desKey spreads 7 key bytes over the high 7 bits of 8 DES key bytes (the
// parity bits, which DES ignores, stay zero).
func desKey(k []byte) []byte {
	return []byte{
		k[0] & 0xfe,
		(k[0]<<7 | k[1]>>1) & 0xfe,
		(k[1]<<6 | k[2]>>2) & 0xfe,
		(k[2]<<5 | k[3]>>3) & 0xfe,
		(k[3]<<4 | k[4]>>4) & 0xfe,
		(k[4]<<3 | k[5]>>5) & 0xfe,
		(k[5]<<2 | k[6]>>6) & 0xfe,
		k[6] << 1,
	}
}

// challengeResponse DES-encrypts the 8-byte challenge with three keys cut
// from the password hash padded to 21 bytes.
func challengeResponse(ch [8]byte, pwHash [16]byte) [24]byte {
	var z [21]byte
	copy(z[:], pwHash[:])
	var out [24]byte
	for i := 0; i < 3; i++ {
		c, err := des.NewCipher(desKey(z[7*i : 7*i+7]))
		if err != nil {
			panic(err) // a DES key is always 8 bytes
		}
		c.Encrypt(out[8*i:], ch[:])
	}
	return out
}

// msv2NTResponse is the peer's NT-Response (GenerateNTResponse).
func msv2NTResponse(authChal, peerChal []byte, user, password string) [24]byte {
	return challengeResponse(challengeHash(peerChal, authChal, user), ntPasswordHash(password))
}

// msv2AuthenticatorResponse is "S=" and 40 upper-case hex digits
// (GenerateAuthenticatorResponse).
func msv2AuthenticatorResponse(password string, ntResp [24]byte, peerChal, authChal []byte, user string) string {
	const (
		magic1 = "Magic server to client signing constant"
		magic2 = "Pad to make it do more than one iteration"
	)
	pwHash := ntPasswordHash(password)
	pwHashHash := md4(pwHash[:])
	h := sha1.New()
	h.Write(pwHashHash[:])
	h.Write(ntResp[:])
	h.Write([]byte(magic1))
	digest := h.Sum(nil)
	ch := challengeHash(peerChal, authChal, user)
	h.Reset()
	h.Write(digest)
	h.Write(ch[:])
	h.Write([]byte(magic2))
	return "S=" + strings.ToUpper(hex.EncodeToString(h.Sum(nil)))
}

// msv2CheckSuccess reports whether a Success message carries the
// authenticator response want ("S=<40 hex digits>", then " M=..." or
// nothing).
func msv2CheckSuccess(msg []byte, want string) bool {
	if len(msg) < len(want) || !strings.EqualFold(string(msg[:len(want)]), want) {
		return false
	}
	return len(msg) == len(want) || msg[len(want)] == ' '
}
