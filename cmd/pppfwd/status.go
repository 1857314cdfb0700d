package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/pppfwd/pppfwd/dataplane/router"
)

const ctlUsage = `Usage: pppfwd status [-s SOCKET] [-json | -watch [-i DURATION] [-n N]]
       pppfwd reconnect [-s SOCKET]
       pppfwd reload [-s SOCKET]

Talk to a running router through its control socket (control.socket; only its
owner and root may).
  status     the session (state, AC, session id, addresses, MTU, uptime, LCP echo
             round trip, reconnects and the last reason, IPv6 prefix), then per
             worker: pps, Mbit/s, CPU share, NAT flows and fill, drops by reason,
             and the shapers' backlog, drops and ECN marks
  reconnect  end the session (PADT) and bring a new one up now
  reload     re-read the configuration file (as SIGHUP): prints what was applied
             and the keys that need a restart

Flags:
  -s, -socket SOCKET  the control socket (default ` + router.DefaultSocket + `)
  -json               status as one JSON object (the snapshot stats.file writes)
  -watch              refresh in place like top, with a CPU bar per worker
  -i DURATION         -watch's refresh interval (default 1s)
  -n N                -watch: stop after N frames (default: until interrupted)
`

func ctlMain(cmd string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), ctlUsage) }
	var sock string
	fs.StringVar(&sock, "socket", router.DefaultSocket, "control socket")
	fs.StringVar(&sock, "s", router.DefaultSocket, "control socket (short for -socket)")
	asJSON := fs.Bool("json", false, "status as JSON")
	watch := fs.Bool("watch", false, "refresh in place")
	every := fs.Duration("i", time.Second, "-watch interval")
	frames := fs.Int("n", 0, "-watch frames (0: until interrupted)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd %s: unexpected argument %q\n%s", cmd, fs.Arg(0), ctlUsage)
		return exitUsage
	}
	if cmd != "status" && (*asJSON || *watch) || *asJSON && *watch || *every <= 0 {
		fmt.Fprintf(stderr, "pppfwd %s: bad flags\n%s", cmd, ctlUsage)
		return exitUsage
	}
	switch {
	case cmd == "status" && *watch:
		return watchStatus(sock, *every, *frames, stdout, stderr)
	case cmd == "status":
		resp, err := router.ControlRequest(sock, "status")
		if err != nil {
			return ctlErr(stderr, sock, err)
		}
		if *asJSON {
			return emit(stdout, stderr, true, resp.Status, nil)
		}
		router.WriteStatus(stdout, resp.Status)
		return exitOK
	}
	resp, err := router.ControlRequest(sock, cmd)
	if err != nil {
		return ctlErr(stderr, sock, err)
	}
	switch cmd {
	case "reload":
		switch {
		case len(resp.Applied) == 0 && len(resp.Restart) == 0:
			fmt.Fprintln(stdout, "no change")
		default:
			fmt.Fprintf(stdout, "applied: %s\n", listOrNone(resp.Applied))
			fmt.Fprintf(stdout, "need a restart (unchanged): %s\n", listOrNone(resp.Restart))
		}
	default:
		fmt.Fprintln(stdout, resp.Message)
	}
	return exitOK
}

func listOrNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

func ctlErr(stderr io.Writer, sock string, err error) int {
	fmt.Fprintf(stderr, "pppfwd: %s: %v\n", sock, err)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
		fmt.Fprintln(stderr, "pppfwd: is the router running (pppfwd run), and is control.socket this path?")
	}
	return exitFailure
}

// watchStatus redraws the status every interval until interrupted (or
// after frames frames): cursor home and clear, as top does; one frame is
// written at once so that a slow terminal never shows half of one.
func watchStatus(sock string, every time.Duration, frames int, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	width := 80
	if c, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && c >= 40 {
		width = c
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var buf bytes.Buffer
	for n := 0; frames == 0 || n < frames; n++ {
		if n > 0 {
			select {
			case <-ctx.Done():
				return exitOK
			case <-t.C:
			}
		}
		buf.Reset()
		buf.WriteString("\x1b[H\x1b[2J")
		resp, err := router.ControlRequest(sock, "status")
		if err != nil {
			fmt.Fprintf(&buf, "pppfwd: %s: %v\n", sock, err)
		} else {
			router.WriteWatch(&buf, resp.Status, width)
		}
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return exitFailure
		}
	}
	return exitOK
}
