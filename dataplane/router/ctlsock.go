package router

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"github.com/pppfwd/pppfwd/internal/peercred"
)

// The control socket is a unix stream socket (mode 0600) that admits
// only the router's own user (and root): the kernel's record of the
// peer (SO_PEERCRED, LOCAL_PEERCRED) decides, not the file mode alone.
// A client sends one request line, a JSON object {"cmd": "status"} or
// the bare command word, and reads one JSON line back (CtlResponse);
// then the connection closes. Commands: status, reconnect, reload.

// CtlResponse is the control socket's answer.
type CtlResponse struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Status is the snapshot (status).
	Status *Stats `json:"status,omitempty"`
	// Applied and Restart are what a reload applied and the keys whose
	// new values need a restart.
	Applied []string `json:"applied,omitempty"`
	Restart []string `json:"restart,omitempty"`
	Message string   `json:"message,omitempty"`
}

// ctlTimeout bounds one control connection (a client that sends
// nothing does not hold a server goroutine).
const ctlTimeout = 5 * time.Second

// maxRequest bounds a request line.
const maxRequest = 4096

// listenControl creates the socket at path, replacing a stale socket
// left by a router that died (but nothing else, and no live socket).
func listenControl(path string) (*net.UnixListener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s: another pppfwd is listening there", path)
		}
		os.Remove(path)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	// Owner only. Between bind and chmod the mode is the umask's; the
	// peer check admits only the owner in any case.
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// serveControl answers control connections until ln closes.
func (r *Router) serveControl(ctx context.Context, ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				r.logf("pppfwd: control socket: %v", err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			return
		}
		go r.handleControl(c)
	}
}

// admitted reports whether uid may use the control socket: the router's
// own effective user and root (or, in tests, allowUID only).
func (r *Router) admitted(uid uint32) bool {
	if u := r.allowUID.Load(); u != nil {
		return uid == *u
	}
	return uid == 0 || int(uid) == os.Geteuid()
}

func (r *Router) handleControl(c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(ctlTimeout))
	enc := json.NewEncoder(c)
	// The request is read first, also from a peer about to be refused,
	// so that the refusal reaches it instead of a broken pipe.
	line, rerr := bufio.NewReader(io.LimitReader(c, maxRequest)).ReadString('\n')
	uid, err := peercred.UID(c)
	if err != nil || !r.admitted(uid) {
		r.refused.Add(1)
		msg := fmt.Sprintf("permission denied: uid %d does not own this pppfwd", uid)
		if err != nil {
			msg = fmt.Sprintf("permission denied: peer unknown: %v", err)
		}
		r.logf("pppfwd: control socket: %s", msg)
		_ = enc.Encode(CtlResponse{Error: msg})
		return
	}
	if rerr != nil && line == "" {
		return
	}
	_ = enc.Encode(r.control(line))
}

// control runs one request line.
func (r *Router) control(line string) CtlResponse {
	line = strings.TrimSpace(line)
	cmd := line
	if strings.HasPrefix(line, "{") {
		var req struct {
			Cmd string `json:"cmd"`
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			return CtlResponse{Error: fmt.Sprintf("bad request: %v", err)}
		}
		cmd = req.Cmd
	}
	switch cmd {
	case "status":
		s := r.Stats()
		return CtlResponse{OK: true, Status: &s}
	case "reconnect":
		if err := r.Reconnect("reconnect requested (control socket)"); err != nil {
			return CtlResponse{Error: err.Error()}
		}
		return CtlResponse{OK: true, Message: "session ended with PADT; reconnecting"}
	case "reload":
		applied, restart, err := r.ReloadFile()
		if err != nil {
			return CtlResponse{Error: err.Error()}
		}
		r.logf("pppfwd: reload (control socket): applied %v; need a restart (unchanged): %v", applied, restart)
		return CtlResponse{OK: true, Applied: applied, Restart: restart}
	}
	return CtlResponse{Error: fmt.Sprintf("unknown command %q (want status, reconnect or reload)", cmd)}
}

// ControlRequest sends cmd to the control socket at path and returns
// the answer; a refusal or a failed command is an error too (with the
// answer).
func ControlRequest(path, cmd string) (*CtlResponse, error) {
	c, err := net.DialTimeout("unix", path, ctlTimeout)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * ctlTimeout))
	req, _ := json.Marshal(map[string]string{"cmd": cmd})
	_, werr := c.Write(append(req, '\n'))
	var resp CtlResponse
	if err := json.NewDecoder(c).Decode(&resp); err != nil {
		if werr != nil {
			return nil, werr
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if !resp.OK {
		return &resp, errors.New(resp.Error)
	}
	return &resp, nil
}
