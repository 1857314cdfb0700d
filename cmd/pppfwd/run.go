package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/pppfwd/pppfwd/dataplane/router"
)

// reload applies file's configuration to r and logs what it did.
func reload(r *router.Router, file string, logf func(string, ...any)) {
	f, err := os.Open(file)
	if err != nil {
		logf("pppfwd: reload: %v", err)
		return
	}
	cfg, err := router.ParseConfig(f)
	f.Close()
	if err != nil {
		logf("pppfwd: reload: %s: %v (nothing changed)", file, err)
		return
	}
	applied, restart, err := r.Reload(cfg)
	switch {
	case err != nil:
		logf("pppfwd: reload: %v (nothing changed)", err)
	case len(applied) == 0 && len(restart) == 0:
		logf("pppfwd: reload: no change")
	default:
		logf("pppfwd: reload: applied %v; need a restart (unchanged): %v", applied, restart)
	}
}

const runUsage = `Usage: pppfwd run [-c FILE] [-check [-v]]

Runs the router on the ports FILE configures (see pppfwd.conf.example).
SIGINT/SIGTERM end the session (LCP Terminate, PADT) and exit 0; SIGHUP
re-reads FILE and applies new shaper rates with the session up.

Flags:
  -c, -config FILE  configuration file (default /etc/pppfwd.conf)
  -check            check FILE (syntax, keys, values) and its interfaces (they exist, differ,
                    and hold no kernel address but link-local; the WAN MTU pppoe.mtu needs),
                    then exit
  -v                with -check: print the effective configuration (defaults included,
                    secrets as ******, rates in bit/s)

Exit status: 0 clean, 1 runtime failure, 2 bad configuration or usage.
`

func runMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {} // printed below: on stdout when asked for, on stderr after an error
	var conf string
	fs.StringVar(&conf, "config", "/etc/pppfwd.conf", "configuration file")
	fs.StringVar(&conf, "c", "/etc/pppfwd.conf", "configuration file (short for -config)")
	check := fs.Bool("check", false, "check the configuration and the interfaces, then exit")
	verbose := fs.Bool("v", false, "with -check: print the effective configuration")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, runUsage)
			return exitOK
		}
		fmt.Fprint(stderr, runUsage)
		return exitUsage
	}
	// The flag package stops at the first argument that is not a flag:
	// "pppfwd run FILE -check" would otherwise run /etc/pppfwd.conf.
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "pppfwd run: unexpected argument %q (flags come first; the file is given with -c FILE)\n%s", fs.Arg(0), runUsage)
		return exitUsage
	}
	if *verbose && !*check {
		fmt.Fprintf(stderr, "pppfwd run: -v needs -check\n%s", runUsage)
		return exitUsage
	}
	f, err := os.Open(conf)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return exitUsage
	}
	// The permissions of the file opened, not of whatever the name points
	// at by the time they would be checked.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return exitUsage
	}
	cfg, err := router.ParseConfig(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %s: %v\n", conf, err)
		return exitUsage
	}
	permErr := router.CheckConfigFile(conf, fi)
	ifErr := cfg.CheckInterfaces()
	if *check {
		if permErr != nil {
			fmt.Fprintf(stderr, "pppfwd: warning: %v\n", permErr)
		}
		if ifErr != nil {
			fmt.Fprintf(stderr, "pppfwd: %s: %s\n", conf, strings.ReplaceAll(ifErr.Error(), "\n", "\n  "))
			return exitUsage
		}
		// pppoe.mtu above 1492 needs a larger WAN MTU, which pppfwd sets
		// at start: -check says so (and when the driver cannot take it),
		// but changes nothing.
		if msg, bad := cfg.CheckWANMTU(); msg != "" {
			kind := "note"
			if bad {
				kind = "warning"
			}
			fmt.Fprintf(stderr, "pppfwd: %s: %s: %s\n", kind, conf, msg)
		}
		if *verbose {
			for _, l := range cfg.Describe() {
				fmt.Fprintln(stdout, l)
			}
		}
		fmt.Fprintf(stdout, "%s: ok\n", conf)
		return exitOK
	}
	// Logs go to stderr through log/slog (log.level, log.format); under
	// systemd the journal stamps the time.
	slogger, err := router.NewLogger(stderr, cfg.Obs, os.Getenv("JOURNAL_STREAM") != "")
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %s: %v\n", conf, err)
		return exitUsage
	}
	logf := router.Logf(slogger)
	if permErr != nil {
		logf("pppfwd: warning: %v", permErr)
	}
	if ifErr != nil {
		// Opening the ports reports a missing one; a kernel address is
		// worth a warning only (the lab and tests may share a port).
		for _, l := range strings.Split(ifErr.Error(), "\n") {
			logf("pppfwd: warning: %s: %s", conf, l)
		}
	}
	// SIGHUP re-reads the configuration and applies what can change with
	// the session up (the shaper rates); caught from here on, so one that
	// comes while the ports open waits instead of killing the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	r, err := router.Open(cfg, router.Ports{}, logf)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return exitFailure
	}
	r.SetLogger(slogger)
	r.SetConfigFile(conf) // the control socket's reload re-reads it
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload(r, conf, logf)
			}
		}
	}()
	if err := r.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return exitFailure
	}
	return exitOK
}
