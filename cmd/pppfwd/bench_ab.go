package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"

	"github.com/pppfwd/pppfwd/bench/ab"
	"github.com/pppfwd/pppfwd/dataplane/router"
)

// abPlaceholderPassword stands in for the PPPoE password in the secrets
// files when --password-file is not given.
const abPlaceholderPassword = "CHANGE-ME"

// abFlags are `pppfwd bench ab`'s flags as parseABFlags read them. The
// password is not read yet (PasswordFile); everything else of Params is
// set and checked by Params.Validate when the files are generated.
type abFlags struct {
	DryRun       bool
	OS           string // whose kernel path: linux or freebsd
	Out          string // write the files to this directory ("": print them)
	Backend      string // the pppfwd side's backend
	Where        string // where the live A/B runs: vm or host ("": not given)
	PasswordFile string // the PPPoE password's file ("": the placeholder)
	Params       ab.Params
	Live         abLiveFlags // the live run's (--where vm or host)
}

const abUsage = `Usage: pppfwd bench ab --where vm [--vcpus N] [--paths kernel,pppfwd] [--runs N] [--json] [--report DIR] [flags]
       pppfwd bench ab --where host [--host-cpus LIST] [--paths kernel,pppfwd] [--runs N] [--json] [--report DIR] [flags]
       pppfwd bench ab --dry-run [--os linux|freebsd] [--out DIR] [flags]

The A/B of pppfwd against the in-kernel PPPoE router path on the same box, ports,
PPPoE account, MTU and shaping: FreeBSD mpd5 (ng_pppoe), pf NAT and dummynet FQ-CoDel
with netisr tuned; Linux pppd (rp-pppoe.so), nftables NAT and cake (or htb + fq_codel).
--dry-run prints the files of both sides, or writes them to --out DIR with run-ab.sh,
which starts either side ("sh run-ab.sh kernel", "sh run-ab.sh pppfwd").
--where vm runs the A/B live with the router under test in the lab VM (Debian's kernel
under qemu TCG; root, qemu): the kernel path and pppfwd one after the other, the same
ladder of offered loads, a round-trip probe every 10 ms and each vCPU's busy share,
then TCP bulk through the router with iperf3 (--tcp-streams, 1 and 4) with the probe running.
--where host runs the same A/B natively, with the router under test in a network namespace
of this host on veth pairs in place of the VM's taps (root): real rates, no emulation, the
per-core figures from this host's /proc/stat of --host-cpus. Its kernel path needs PPPoE
in this kernel (/dev/ppp, the pppoe module), pppd with rp-pppoe.so and nft; --paths pppfwd
measures pppfwd alone, which needs none of them.

Flags:
`

// abFlagSet defines the flags into f, with the values parseABFlags
// converts afterwards in raw.
func abFlagSet(f *abFlags, raw *abRaw) *flag.FlagSet {
	fs := flag.NewFlagSet("pppfwd bench ab", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	p := &f.Params
	fs.BoolVar(&f.DryRun, "dry-run", false, "print (or with --out write) the configurations of both sides and exit")
	fs.StringVar(&f.OS, "os", defaultABOS(), "the kernel path's OS: linux or freebsd")
	fs.StringVar(&f.Out, "out", "", "write the files to this directory (created mode 0700) instead of printing them")
	fs.StringVar(&f.Backend, "backend", "", "the pppfwd side's backend: afpacket, afxdp or netmap (default: netmap on freebsd, afpacket on linux)")
	fs.StringVar(&f.Where, "where", "", "run the A/B live: vm (the router under test in the lab VM) or host (in a network namespace of this host)")
	abLiveFlagSet(fs, &f.Live)
	fs.StringVar(&p.WAN, "wan", "", "the WAN port (default: igb0 on freebsd, eth0 on linux)")
	fs.StringVar(&p.LAN, "lan", "", "the LAN port (default: igb1 on freebsd, eth1 on linux)")
	fs.StringVar(&raw.lanAddr, "lan-address", "192.168.1.1/24", "the router's LAN address and the LAN's prefix length")
	fs.StringVar(&p.User, "user", "", "the PPPoE login (required)")
	fs.StringVar(&f.PasswordFile, "password-file", "", "a file only its owner can read holding the PPPoE password on one line (default: the placeholder "+abPlaceholderPassword+")")
	fs.StringVar(&p.Service, "service", "", "the PPPoE Service-Name to ask for (default: any)")
	fs.IntVar(&p.MTU, "mtu", ab.DefaultMTU, "the PPP MTU and MRU of both sides, 576..1500 (above 1492: RFC 4638)")
	fs.StringVar(&raw.shape, "shape", "off", `shaping of both sides: off, or "download BIT/S upload BIT/S [overhead N] [mpu N] [ptm|atm] [pppoe-ptm|ethernet|...]"`)
	fs.IntVar(&p.Workers, "workers", 0, "pppfwd's workers (default: one per CPU, CPUs - 1 on 2 to 4)")
	fs.IntVar(&p.CPUs, "cpus", runtime.NumCPU(), "the A/B box's CPUs (FreeBSD: net.isr.maxthreads)")
	return fs
}

// abRaw holds the flags parseABFlags converts after parsing.
type abRaw struct {
	lanAddr, shape string
}

func defaultABOS() string {
	if runtime.GOOS == "freebsd" {
		return "freebsd"
	}
	return "linux"
}

// parseABFlags reads `pppfwd bench ab`'s arguments. -h gives
// flag.ErrHelp; other errors name the flag and what it allows.
func parseABFlags(args []string) (abFlags, error) {
	var f abFlags
	var raw abRaw
	fs := abFlagSet(&f, &raw)
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	f.Live.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.Live.set[fl.Name] = true })
	defaults := map[string][2]string{"freebsd": {"igb0", "igb1"}, "linux": {"eth0", "eth1"}}
	ports, ok := defaults[f.OS]
	if !ok {
		return f, fmt.Errorf("--os %q: allowed: linux, freebsd", f.OS)
	}
	if f.Params.WAN == "" {
		f.Params.WAN = ports[0]
	}
	if f.Params.LAN == "" {
		f.Params.LAN = ports[1]
	}
	if f.Backend == "" {
		f.Backend = ab.DefaultBackend(f.OS)
	}
	if f.Params.User == "" && f.DryRun {
		return f, errors.New("--user is required: the PPPoE login")
	}
	pfx, err := netip.ParsePrefix(raw.lanAddr)
	if err != nil || !pfx.Addr().Is4() {
		return f, fmt.Errorf("--lan-address %q: allowed: the router's IPv4 address with the LAN's prefix length, e.g. 192.168.1.1/24", raw.lanAddr)
	}
	f.Params.LANNet, f.Params.Router = pfx.Masked(), pfx.Addr()
	if f.Params.Shape, err = ab.ParseShape(raw.shape); err != nil {
		return f, fmt.Errorf("--shape: %v", err)
	}
	switch f.Where {
	case "", "vm", "host":
	default:
		return f, fmt.Errorf("--where %q: allowed: vm, host", f.Where)
	}
	return f, nil
}

// benchAB is `pppfwd bench ab`.
func benchAB(args []string, stdout, stderr io.Writer) int {
	f, err := parseABFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stderr, abUsage)
		fs := abFlagSet(&abFlags{}, &abRaw{})
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v (pppfwd bench ab -h lists the flags)\n", err)
		return exitUsage
	}
	if !f.DryRun {
		return benchABLive(f, stdout, stderr)
	}
	if f.PasswordFile == "" {
		f.Params.Password = abPlaceholderPassword
		fmt.Fprintf(stderr, "pppfwd bench ab: no --password-file: the secrets files hold the placeholder %s\n", abPlaceholderPassword)
	} else if f.Params.Password, err = router.ReadPasswordFile(f.PasswordFile); err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: --password-file: %v\n", err)
		return exitUsage
	}
	files, err := ab.Files(f.OS, f.Params, f.Backend)
	if err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
		return exitUsage
	}
	if f.Out == "" {
		if err := ab.Write(stdout, files); err != nil {
			fmt.Fprintf(stderr, "pppfwd: %v\n", err)
			return exitFailure
		}
		return exitOK
	}
	if err := writeABFiles(f.Out, files); err != nil {
		fmt.Fprintf(stderr, "pppfwd bench ab: %v\n", err)
		return exitFailure
	}
	for _, file := range files {
		fmt.Fprintf(stdout, "wrote %s (%04o)\n", filepath.Join(f.Out, file.Path), file.Mode.Perm())
	}
	fmt.Fprintf(stdout, "on the A/B box, as root: sh %s kernel (the kernel path), sh %[1]s pppfwd (pppfwd)\n", filepath.Join(f.Out, "run-ab.sh"))
	return exitOK
}

// writeABFiles writes files into dir (created mode 0700 if missing),
// each with its mode whatever the umask or an older file's mode.
func writeABFiles(dir string, files []ab.File) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Path)
		fh, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, f.Mode.Perm())
		if err != nil {
			return err
		}
		// Chmod before writing: an older file may have had a wider mode.
		if err := fh.Chmod(f.Mode.Perm()); err != nil {
			fh.Close()
			return err
		}
		if _, err := io.WriteString(fh, f.Body); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	return nil
}
