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
	cfg, err := router.ParseConfig(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %s: %v\n", *conf, err)
		return 1
	}
	if *check {
		fmt.Fprintf(stdout, "%s: ok\n", *conf)
		return 0
	}
	logger := log.New(stderr, "", log.LstdFlags)
	r, err := router.Open(cfg, router.Ports{}, logger.Printf)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := r.Run(ctx); err != nil {
		fmt.Fprintf(stderr, "pppfwd: %v\n", err)
		return 1
	}
	return 0
}
