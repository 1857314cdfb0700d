package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
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

func runMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pppfwd run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	conf := fs.String("config", "/etc/pppfwd.conf", "configuration file (see pppfwd.conf.example)")
	check := fs.Bool("check", false, "parse the configuration and exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	f, err := os.Open(*conf)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	// The permissions of the file opened, not of whatever the name points
	// at by the time they would be checked.
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	cfg, err := router.ParseConfig(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %s: %v\n", *conf, err)
		return 1
	}
	permErr := router.CheckConfigFile(*conf, fi)
	if *check {
		if permErr != nil {
			fmt.Fprintf(stderr, "pppfwd: warning: %v\n", permErr)
		}
		fmt.Fprintf(stdout, "%s: ok\n", *conf)
		return 0
	}
	logger := log.New(stderr, "", log.LstdFlags)
	if permErr != nil {
		logger.Printf("pppfwd: warning: %v", permErr)
	}
	// SIGHUP re-reads the configuration and applies what can change with
	// the session up (the shaper rates); caught from here on, so one that
	// comes while the ports open waits instead of killing the process.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	r, err := router.Open(cfg, router.Ports{}, logger.Printf)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				reload(r, *conf, logger.Printf)
			}
		}
	}()
	if err := r.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	return 0
}
