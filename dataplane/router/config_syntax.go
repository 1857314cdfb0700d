package router

import (
	"errors"
	"strings"
)

// The line syntax of a configuration file:
//
//	key value
//	key = value
//	key "a quoted value with \" and \\ and # inside"
//
// A '#' starts a comment at the start of a line (after any blanks) or
// after a blank (space, tab, CR, VT, FF); elsewhere it is part of the
// value, so "pppoe.user 0021...#0001@t-online.de" keeps its '#'. An
// unquoted value runs to the end of the line or the comment, blanks
// around it removed; blanks inside it are kept ("bandwidth 40mbit
// pppoe-ptm"). A value that starts with '"' ends at the next unescaped
// '"'; inside, \" stands for '"' and \\ for '\', and any other
// backslash is an error, so every string (a password with '#', blanks,
// quotes or backslashes) can be written. After the closing quote only
// blanks and a comment may follow. "" is an explicit empty value.

// errNoValue is splitLine's error for a key without a value.
var errNoValue = errors.New("has no value")

func isBlank(b byte) bool { return b == ' ' || b == '\t' || b == '\r' || b == '\v' || b == '\f' }

// splitLine splits one line into key and value. An empty key means a
// blank or comment line. Errors never quote the value: it may be a
// password.
func splitLine(s string) (key, val string, err error) {
	n, i := len(s), 0
	for i < n && isBlank(s[i]) {
		i++
	}
	if i == n || s[i] == '#' {
		return "", "", nil
	}
	ks := i
	for i < n && !isBlank(s[i]) && s[i] != '=' {
		i++
	}
	key = s[ks:i]
	for i < n && isBlank(s[i]) {
		i++
	}
	if i < n && s[i] == '=' {
		i++
		for i < n && isBlank(s[i]) {
			i++
		}
	}
	if key == "" {
		return "", "", errors.New("a line starts with '=': want KEY VALUE")
	}
	if i < n && s[i] == '"' {
		val, i, err = unquote(s, i)
		if err != nil {
			return key, "", err
		}
		j := i
		for j < n && isBlank(s[j]) {
			j++
		}
		if j < n && (j == i || s[j] != '#') {
			return key, "", errors.New("text after the closing quote: end the line there or start a comment with a blank and '#'")
		}
		return key, val, nil
	}
	vs := i
	for i < n && (s[i] != '#' || i > 0 && !isBlank(s[i-1])) {
		i++
	}
	val = strings.TrimRight(s[vs:i], " \t\r\v\f")
	if val == "" {
		return key, "", errNoValue
	}
	return key, val, nil
}

// unquote reads the quoted value that starts at s[i] == '"' and returns
// it with the index after its closing quote. The closing quote is found
// before escapes are checked, so a line cut inside a quoted value is
// reported as unterminated whatever follows.
func unquote(s string, i int) (string, int, error) {
	end := -1
	for j := i + 1; j < len(s); j++ {
		if s[j] == '\\' {
			j++
			continue
		}
		if s[j] == '"' {
			end = j
			break
		}
	}
	if end < 0 {
		return "", 0, errors.New(`unterminated quoted value: end it with '"' on the same line (write \" for a quote, \\ for a backslash)`)
	}
	raw := s[i+1 : end]
	if !strings.ContainsRune(raw, '\\') {
		return raw, end + 1, nil
	}
	var b strings.Builder
	for j := 0; j < len(raw); j++ {
		c := raw[j]
		if c == '\\' {
			j++ // raw cannot end in a lone '\': it would have escaped the closing quote
			if raw[j] != '"' && raw[j] != '\\' {
				return "", 0, errors.New(`unknown escape in a quoted value: only \" and \\ are allowed`)
			}
			c = raw[j]
		}
		b.WriteByte(c)
	}
	return b.String(), end + 1, nil
}

// quote returns val as splitLine reads it back: as it is when it is
// safe unquoted, else double-quoted with '"' and '\' escaped.
func quote(val string) string {
	safe := val != "" && !isBlank(val[0]) && !isBlank(val[len(val)-1]) && val[0] != '"' && val[0] != '='
	for i := 0; safe && i < len(val); i++ {
		if val[i] == '#' || val[i] == '\n' || val[i] < ' ' && val[i] != '\t' {
			safe = false
		}
	}
	if safe {
		return val
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(val); i++ {
		if val[i] == '"' || val[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(val[i])
	}
	b.WriteByte('"')
	return b.String()
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// suggestKey returns the table's keys nearest to an unknown one, or "":
// the keys whose last part the unknown one is ("user" for pppoe.user,
// as pppd names it; "interface" gives lan.interface or wan.interface),
// else the nearest by edit distance within a third of the key's length
// (at least 2).
func suggestKey(unknown string) string {
	var last []string
	best, bestD := "", max(2, len(unknown)/3)+1
	for i := range keyTable {
		k := keyTable[i].Name
		if _, l, _ := strings.Cut(k, "."); l == unknown {
			last = append(last, k)
		}
		if d := editDistance(unknown, k); d < bestD {
			best, bestD = k, d
		}
	}
	if len(last) > 0 {
		return strings.Join(last, " or ")
	}
	return best
}
