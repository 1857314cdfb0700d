package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pppfwd/pppfwd/dataplane/router"
)

// The packaging tests hold packaging/ to the code: the service files
// start pppfwd with flags its CLI accepts, let it write exactly where its
// configuration keys point, grant the capabilities the code names, and
// make install / uninstall put and remove exactly the files they list.

const (
	repoRoot = "../.."
	unitPath = repoRoot + "/packaging/systemd/pppfwd.service"
	rcdPath  = repoRoot + "/packaging/freebsd/rc.d/pppfwd"
)

// unit is a parsed systemd unit file.
type unit struct {
	text     string
	keys     map[string][]string // "Section.Key" -> values in order
	comments []string            // comment lines, in order
}

func readUnit(t *testing.T, path string) unit {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	u := unit{text: string(b), keys: map[string][]string{}}
	section := ""
	for i, line := range strings.Split(u.text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case strings.HasPrefix(line, "#"), strings.HasPrefix(line, ";"):
			u.comments = append(u.comments, line)
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		case strings.HasSuffix(line, "\\"):
			t.Fatalf("%s:%d: continuation lines are not expected", path, i+1)
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Fatalf("%s:%d: not a key=value line in a section: %q", path, i+1, line)
			}
			u.keys[section+"."+strings.TrimSpace(k)] = append(u.keys[section+"."+strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	return u
}

// one returns the single value of key.
func (u unit) one(t *testing.T, key string) string {
	t.Helper()
	v := u.keys[key]
	if len(v) != 1 {
		t.Fatalf("%s: %d values %q, want one", key, len(v), v)
	}
	return v[0]
}

// list returns the space-separated words of every value of key.
func (u unit) list(key string) []string {
	var out []string
	for _, v := range u.keys[key] {
		out = append(out, strings.Fields(v)...)
	}
	return out
}

// configFlagValue returns the value of -c/-config in args and its index.
func configFlagValue(t *testing.T, args []string) (string, int) {
	t.Helper()
	for i, a := range args {
		switch {
		case (a == "-c" || a == "-config" || a == "--c" || a == "--config") && i+1 < len(args):
			return args[i+1], i + 1
		case strings.HasPrefix(a, "-c=") || strings.HasPrefix(a, "-config="):
			t.Fatalf("%q: write the file as a separate argument", a)
		}
	}
	t.Fatalf("%q names no configuration file (-c FILE)", args)
	return "", 0
}

// checkRunArgs checks that args (a "run" command line without the
// program) parse in pppfwd's own CLI, and that its -c names the file the
// router reads: a file with an unknown key there fails with that file's
// name. It returns the -c value.
func checkRunArgs(t *testing.T, what string, args []string) string {
	t.Helper()
	if len(args) == 0 || args[0] != "run" {
		t.Fatalf("%s: %q does not run the router (want pppfwd run ...)", what, args)
	}
	if slices.Contains(args, "-check") || slices.Contains(args, "--check") {
		t.Fatalf("%s: %q only checks the file and exits", what, args)
	}
	// -h after the flags: 0 and the usage only when every flag before it
	// parses and nothing positional stops the parse.
	code, out, errOut := runArgs(append(slices.Clone(args), "-h")...)
	if code != exitOK || !strings.HasPrefix(out, "Usage: pppfwd run") || errOut != "" {
		t.Fatalf("%s: pppfwd %s -h: exit %d, stdout %q, stderr %q: the CLI refuses these flags",
			what, strings.Join(args, " "), code, out, errOut)
	}
	conf, i := configFlagValue(t, args)
	bad := writeConf(t, "lan.interface a\nworkrs 2\n")
	alt := slices.Clone(args)
	alt[i] = bad
	code, _, errOut = runArgs(alt...)
	if code != exitUsage || !strings.Contains(errOut, bad) || !strings.Contains(errOut, `unknown key "workrs"`) {
		t.Fatalf("%s: with -c naming a file with an unknown key: exit %d, stderr %q; want 2 naming %s", what, code, errOut, bad)
	}
	return conf
}

// callsWith reports whether function fn of the Go file path calls
// pkg.name with an argument that is the selector sel (syscall.SIGHUP).
func callsWith(t *testing.T, path, fn, pkg, name, sel string) bool {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != fn || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			c, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if s, ok := c.Fun.(*ast.SelectorExpr); !ok || s.Sel.Name != name || !isIdent(s.X, pkg) {
				return true
			}
			for _, a := range c.Args {
				if s, ok := a.(*ast.SelectorExpr); ok && s.Sel.Name == sel[strings.IndexByte(sel, '.')+1:] && isIdent(s.X, sel[:strings.IndexByte(sel, '.')]) {
					found = true
				}
			}
			return true
		})
	}
	return found
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// goFiles returns the non-test Go files under the repository's dirs.
func goFiles(t *testing.T, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, d := range dirs {
		err := filepath.WalkDir(filepath.Join(repoRoot, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !e.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// TestPackagingSystemdExec: the unit starts "pppfwd run" with flags the
// CLI accepts and the -c that install's CONFDIR gives, at the path
// install's SBINDIR gives; reload is SIGHUP and stop SIGTERM, the signals
// runMain handles; Type matches whether pppfwd speaks sd_notify.
func TestPackagingSystemdExec(t *testing.T) {
	u := readUnit(t, unitPath)
	argv := strings.Fields(u.one(t, "Service.ExecStart"))
	if argv[0] != "/usr/local/sbin/pppfwd" {
		t.Errorf("ExecStart runs %s, want /usr/local/sbin/pppfwd (where make install puts it)", argv[0])
	}
	if conf := checkRunArgs(t, "ExecStart", argv[1:]); conf != "/etc/pppfwd/pppfwd.conf" {
		t.Errorf("ExecStart reads %s, want /etc/pppfwd/pppfwd.conf (where make install puts the example)", conf)
	}

	if r := u.one(t, "Service.ExecReload"); r != "/bin/kill -HUP $MAINPID" {
		t.Errorf("ExecReload=%s, want /bin/kill -HUP $MAINPID", r)
	}
	if !callsWith(t, "run.go", "runMain", "signal", "Notify", "syscall.SIGHUP") {
		t.Error("runMain no longer calls signal.Notify(..., syscall.SIGHUP): ExecReload's SIGHUP would kill pppfwd")
	}
	if ks := u.keys["Service.KillSignal"]; len(ks) > 0 && ks[0] != "SIGTERM" {
		t.Errorf("KillSignal=%s: pppfwd ends the session cleanly on SIGTERM", ks[0])
	}
	if !callsWith(t, "run.go", "runMain", "signal", "NotifyContext", "syscall.SIGTERM") {
		t.Error("runMain no longer handles SIGTERM: systemctl stop would not send PADT")
	}

	notify := false
	for _, f := range goFiles(t, "cmd", "dataplane", "internal", "nic", "pppoe") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		notify = notify || bytes.Contains(b, []byte("NOTIFY_SOCKET"))
	}
	want := map[bool]string{false: "simple", true: "notify"}[notify]
	if ty := u.one(t, "Service.Type"); ty != want {
		t.Errorf("Type=%s, want %s (pppfwd reads NOTIFY_SOCKET: %v)", ty, want, notify)
	}
	if r := u.one(t, "Service.Restart"); r != "on-failure" {
		t.Errorf("Restart=%s, want on-failure", r)
	}
	if p := u.one(t, "Service.RestartPreventExitStatus"); p != "2" || exitUsage != 2 {
		t.Errorf("RestartPreventExitStatus=%s, exitUsage %d: a bad configuration is not retried", p, exitUsage)
	}
}

// exampleValues returns the example configuration's value of each key,
// from its lines and commented-out lines ("# key value # comment").
func exampleValues(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, "pppfwd.conf.example"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vals := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(strings.TrimPrefix(strings.TrimSpace(sc.Text()), "#"))
		if len(fs) < 2 || strings.HasPrefix(fs[0], "#") || !strings.Contains(fs[0], ".") {
			continue
		}
		if _, ok := vals[fs[0]]; !ok {
			vals[fs[0]] = fs[1]
		}
	}
	return vals
}

// writtenKeys are the configuration keys naming files pppfwd itself
// writes: through a temporary file in the same directory
// (dataplane/router writeFileAtomic, pppoe/state.go) or bound there (the
// control socket, dataplane/router/ctlsock.go).
var writtenKeys = []string{"pppoe.state", "pppoe.resolv", "stats.file", "metrics.textfile", "control.socket"}

// TestPackagingSystemdPaths: under ProtectSystem=strict, every file pppfwd
// writes at the example's paths (and the default control socket) is in a
// writable directory, and every writable directory is one of theirs.
func TestPackagingSystemdPaths(t *testing.T) {
	u := readUnit(t, unitPath)
	for k, want := range map[string]string{
		"Service.ProtectSystem": "strict", "Service.ProtectHome": "yes", "Service.PrivateTmp": "yes",
		"Service.NoNewPrivileges": "yes", "Service.LimitMEMLOCK": "infinity",
		"Service.RuntimeDirectory": "pppfwd", "Service.StateDirectory": "pppfwd",
	} {
		if got := u.one(t, k); got != want {
			t.Errorf("%s=%s, want %s", k, got, want)
		}
	}
	writable := map[string]string{ // directory -> the key that makes it writable
		"/run/" + u.one(t, "Service.RuntimeDirectory"):   "RuntimeDirectory",
		"/var/lib/" + u.one(t, "Service.StateDirectory"): "StateDirectory",
	}
	for _, p := range u.list("Service.ReadWritePaths") {
		writable[filepath.Clean(strings.TrimPrefix(p, "-"))] = "ReadWritePaths"
	}

	vals := exampleValues(t)
	if s := vals["control.socket"]; s != router.DefaultSocket {
		t.Errorf("the example's control.socket is %q, the code's default %q", s, router.DefaultSocket)
	}
	dirs := map[string]string{} // directory -> key of a file pppfwd writes there
	for _, k := range writtenKeys {
		p := vals[k]
		if !filepath.IsAbs(p) {
			t.Errorf("the example names no absolute path for %s (%q)", k, p)
			continue
		}
		dir := filepath.Dir(p)
		dirs[dir] = k
		covered := false
		for w := range writable {
			covered = covered || dir == w || strings.HasPrefix(dir, w+"/")
		}
		if !covered {
			t.Errorf("%s %s: %s is read-only under ProtectSystem=strict (writable: %v)", k, p, dir, writable)
		}
	}
	for w, by := range writable {
		if _, ok := dirs[w]; !ok {
			t.Errorf("%s makes %s writable, where no file of %v goes (%v)", by, w, writtenKeys, dirs)
		}
	}
}

var (
	capRE      = regexp.MustCompile(`\bCAP_[A-Z_]+\b`)
	codePathRE = regexp.MustCompile(`\b(?:nic|dataplane|internal|pppoe)(?:/[a-z0-9_]+)*\b`)
)

// TestPackagingSystemdCapabilities: the unit grants the same capabilities
// ambient and bounding; each has a comment naming code that needs it, of
// which some package names that capability itself; every capability the
// code names is either granted or explained in the unit.
func TestPackagingSystemdCapabilities(t *testing.T) {
	u := readUnit(t, unitPath)
	bound := u.list("Service.CapabilityBoundingSet")
	amb := u.list("Service.AmbientCapabilities")
	if len(bound) == 0 {
		t.Fatal("no CapabilityBoundingSet: root keeps every capability")
	}
	if !slices.Equal(slices.Sorted(slices.Values(bound)), slices.Sorted(slices.Values(amb))) {
		t.Errorf("CapabilityBoundingSet %q and AmbientCapabilities %q differ", bound, amb)
	}
	for _, c := range bound {
		var block []string
		for i, l := range u.comments {
			if strings.HasPrefix(l, "#   "+c+" ") {
				block = append(block, l)
				for _, m := range u.comments[i+1:] {
					if !strings.HasPrefix(m, "#     ") {
						break
					}
					block = append(block, m)
				}
			}
		}
		if len(block) == 0 {
			t.Errorf("%s: no comment line \"#   %s  <the code that needs it>\"", c, c)
			continue
		}
		named := false
		for _, p := range codePathRE.FindAllString(strings.Join(block, "\n"), -1) {
			fi, err := os.Stat(filepath.Join(repoRoot, p))
			if err != nil || !fi.IsDir() {
				t.Errorf("%s's comment names %s, which is not a package here", c, p)
				continue
			}
			for _, f := range goFiles(t, p) {
				b, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				named = named || bytes.Contains(b, []byte(c))
			}
		}
		if !named {
			t.Errorf("%s: no package its comment names mentions %s: %q", c, c, block)
		}
	}
	for _, f := range goFiles(t, "nic", "dataplane", "pppoe", "internal/rawsock", "internal/pin") {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range capRE.FindAllString(string(b), -1) {
			if !strings.Contains(u.text, c) {
				t.Errorf("%s names %s; the unit neither grants it nor says why not", f, c)
			}
		}
	}
	if !slices.Contains(bound, "CAP_IPC_LOCK") && u.one(t, "Service.LimitMEMLOCK") != "infinity" {
		t.Error("without CAP_IPC_LOCK, AF_XDP's UMEM needs LimitMEMLOCK=infinity")
	}
}

// TestPackagingSystemdVerify: systemd-analyze verify accepts the unit
// (with ExecStart pointed at an executable that exists here) and says
// nothing about it; a copy with an unknown key shows the check can fail.
func TestPackagingSystemdVerify(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit's syntax is not checked (apt-get install systemd)")
	}
	if _, err := os.Stat("/bin/kill"); err != nil {
		t.Skipf("no /bin/kill here (procps), which ExecReload runs: %v", err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(unitPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "ExecStart=/usr/local/sbin/pppfwd ", "ExecStart="+exe+" ", 1)
	verify := func(text string) (string, error) {
		p := filepath.Join(t.TempDir(), "pppfwd.service")
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(sa, "verify", p).CombinedOutput()
		var ours []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "pppfwd") {
				ours = append(ours, l)
			}
		}
		return strings.Join(ours, "\n"), err
	}
	if out, err := verify(text); err != nil || out != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	bad := strings.Replace(text, "[Service]\n", "[Service]\nRestartSecs=5s\n", 1)
	if out, _ := verify(bad); !strings.Contains(out, "RestartSecs") {
		t.Errorf("systemd-analyze verify said nothing of an unknown key (%q): the check above sees nothing", out)
	}
}

// rcStub stands in for /etc/rc.subr: run_rc_command prints the script's
// settings, or runs the method for its argument.
const rcStub = `
load_rc_config() { :; }
warn() { echo "WARNING: $*" >&2; }
kill() { echo "kill $*"; }
wait_for_pids() { echo "wait $*"; }
check_pidfile() { case "$1" in "$pppfwd_supervisor_pidfile") echo 200;; "$pidfile") echo 100;; esac; }
run_rc_command() {
	case "$1" in
	dump)
		for v in name rcvar command command_args pidfile procname pppfwd_supervisor_pidfile sig_reload extra_commands required_files start_precmd restart_precmd; do
			eval "echo \"$v=\${$v}\""
		done;;
	configtest) eval "$configtest_cmd";;
	status) eval "$status_postcmd";;
	stop) rc_pid=$(check_pidfile "$pidfile" "$procname"); eval "$stop_cmd";;
	esac
}
`

// runRCD runs the rc.d script with rcStub for /etc/rc.subr and pppfwd
// (procname) replaced by prog, if set.
func runRCD(t *testing.T, prog string, env []string, arg string) (string, error) {
	t.Helper()
	b, err := os.ReadFile(rcdPath)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	stub := filepath.Join(dir, "rc.subr")
	if err := os.WriteFile(stub, []byte(rcStub), 0o644); err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if !strings.Contains(text, "\n. /etc/rc.subr\n") {
		t.Fatal("the rc.d script does not source /etc/rc.subr")
	}
	text = strings.Replace(text, "\n. /etc/rc.subr\n", "\n. "+stub+"\n", 1)
	if prog != "" {
		text = strings.Replace(text, "\nprocname=/usr/local/sbin/pppfwd\n", "\nprocname="+prog+"\n", 1)
	}
	script := filepath.Join(dir, "pppfwd")
	if err := os.WriteFile(script, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", script, arg)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestPackagingHelperProcess is pppfwd's main for the rc.d script's
// tests (PPPFWD_PACKAGING_HELPER=1), run through a wrapper script.
func TestPackagingHelperProcess(t *testing.T) {
	if os.Getenv("PPPFWD_PACKAGING_HELPER") != "1" {
		t.Skip("run by TestPackagingRCD as pppfwd")
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// TestPackagingRCD: the rc.d script parses (sh -n), declares its rcorder
// and rc.conf names, starts pppfwd under daemon(8) with a "run" command
// line the CLI accepts, and its configtest, status and stop run pppfwd's
// -check, pppfwd status -s and stop pppfwd before daemon(8).
func TestPackagingRCD(t *testing.T) {
	if out, err := exec.Command("sh", "-n", rcdPath).CombinedOutput(); err != nil {
		t.Fatalf("sh -n %s: %v\n%s", rcdPath, err, out)
	}
	b, err := os.ReadFile(rcdPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"#!/bin/sh\n", "\n# PROVIDE: pppfwd\n", "\n# REQUIRE: ", "\n# KEYWORD: shutdown\n",
		"\nname=pppfwd\n", "\nrcvar=pppfwd_enable\n", "\n. /etc/rc.subr\n", "\nload_rc_config $name\n", "\nrun_rc_command \"$1\"\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the rc.d script lacks %q", want)
		}
	}

	out, err := runRCD(t, "", nil, "dump")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	vars := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(l, "=")
		vars[k] = v
	}
	for k, want := range map[string]string{
		"name": "pppfwd", "rcvar": "pppfwd_enable", "command": "/usr/sbin/daemon", "procname": "/usr/local/sbin/pppfwd",
		"sig_reload": "HUP", "required_files": "/usr/local/etc/pppfwd/pppfwd.conf",
		"start_precmd": "pppfwd_configtest", "restart_precmd": "pppfwd_configtest",
	} {
		if vars[k] != want {
			t.Errorf("%s=%q, want %q", k, vars[k], want)
		}
	}
	if ec := strings.Fields(vars["extra_commands"]); !slices.Contains(ec, "reload") || !slices.Contains(ec, "configtest") {
		t.Errorf("extra_commands=%q, want reload and configtest", vars["extra_commands"])
	}
	args := strings.Fields(vars["command_args"])
	at := slices.Index(args, vars["procname"])
	if at < 0 {
		t.Fatalf("command_args %q do not run %s", args, vars["procname"])
	}
	daemonArgs := strings.Join(args[:at], " ")
	for _, want := range []string{"-p " + vars["pidfile"], "-P " + vars["pppfwd_supervisor_pidfile"], "-T pppfwd", "-R "} {
		if !strings.Contains(daemonArgs, want) {
			t.Errorf("daemon(8) arguments %q lack %q", daemonArgs, want)
		}
	}
	if vars["pidfile"] == "" || vars["pidfile"] == vars["pppfwd_supervisor_pidfile"] {
		t.Errorf("pidfile %q and supervisor pidfile %q must be two files", vars["pidfile"], vars["pppfwd_supervisor_pidfile"])
	}
	if conf := checkRunArgs(t, "rc.d command_args", args[at+1:]); conf != vars["required_files"] {
		t.Errorf("pppfwd reads %s, the script requires %s", conf, vars["required_files"])
	}

	// pppfwd itself: this test binary running TestPackagingHelperProcess.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(t.TempDir(), "pppfwd")
	wrapper := "#!/bin/sh\nPPPFWD_PACKAGING_HELPER=1 exec '" + exe + "' -test.run='^TestPackagingHelperProcess$' -- \"$@\"\n"
	if err := os.WriteFile(prog, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := writeConf(t, "lan.interface a\nworkrs 2\n")
	out, err = runRCD(t, prog, []string{"pppfwd_config=" + bad}, "configtest")
	if err == nil || !strings.Contains(out, `unknown key "workrs"`) || !strings.Contains(out, bad) {
		t.Errorf("configtest of a bad file: %v\n%s\nwant a failure naming the file and the key", err, out)
	}
	sock := filepath.Join(t.TempDir(), "none.sock")
	out, err = runRCD(t, prog, []string{"pppfwd_socket=" + sock}, "status")
	if err == nil || !strings.Contains(out, sock) {
		t.Errorf("status with no router on %s: %v\n%s\nwant pppfwd status failing on that socket", sock, err, out)
	}
	// stop: pppfwd (100) first and waited for, then daemon(8) (200).
	out, err = runRCD(t, "", nil, "stop")
	if want := "Stopping pppfwd.\nkill -TERM 100\nwait 100\nkill -TERM 200\nwait 200\n"; err != nil || out != want {
		t.Errorf("stop: %v\n%q\nwant %q", err, out, want)
	}
}

// files lists the regular files under root with their permission bits.
func files(t *testing.T, root string) map[string]fs.FileMode {
	t.Helper()
	m := map[string]fs.FileMode{}
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		m[rel] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestPackagingInstall: make install DESTDIR=... puts exactly the listed
// files with their modes (a static, stripped, trimmed pppfwd printing
// VERSION; the example; the unit or the rc.d script, rewritten for
// PREFIX and CONFDIR), never touches pppfwd.conf, and make uninstall
// leaves no file of its own behind.
func TestPackagingInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds pppfwd three times")
	}
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skipf("make install is for Linux and FreeBSD, not %s", runtime.GOOS)
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make is not installed")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not in PATH")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	makeIn := func(args ...string) {
		t.Helper()
		cmd := exec.Command(mk, append([]string{"-C", root, "--no-print-directory", "GO=" + goBin}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	same := func(installed, src string) {
		t.Helper()
		a, err := os.ReadFile(installed)
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(root, src))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs from %s", installed, src)
		}
	}
	wantFiles := func(dest string, want map[string]fs.FileMode) {
		t.Helper()
		got := files(t, dest)
		for f, m := range want {
			if gm, ok := got[f]; !ok {
				t.Errorf("%s was not installed", f)
			} else if gm != m {
				t.Errorf("%s: mode %v, want %v", f, gm, m)
			}
		}
		for f := range got {
			if _, ok := want[f]; !ok {
				t.Errorf("%s was installed too", f)
			}
		}
	}

	t.Run("Linux", func(t *testing.T) {
		dest := t.TempDir()
		makeIn("install", "DESTDIR="+dest, "INSTALL_OS=Linux", "VERSION=v0.0.0-packagingtest")
		wantFiles(dest, map[string]fs.FileMode{
			"usr/local/sbin/pppfwd": 0o755, "etc/pppfwd/pppfwd.conf.example": 0o644, "lib/systemd/system/pppfwd.service": 0o644,
		})
		same(filepath.Join(dest, "etc/pppfwd/pppfwd.conf.example"), "pppfwd.conf.example")
		same(filepath.Join(dest, "lib/systemd/system/pppfwd.service"), "packaging/systemd/pppfwd.service")
		bin := filepath.Join(dest, "usr/local/sbin/pppfwd")
		if runtime.GOOS == "linux" {
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "pppfwd v0.0.0-packagingtest ") {
				t.Errorf("installed pppfwd version: %v %q", err, out)
			}
			f, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range f.Progs {
				if p.Type == elf.PT_INTERP {
					t.Error("the installed pppfwd has a program interpreter: not static (CGO_ENABLED=0)")
				}
			}
			if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
				t.Errorf("the installed pppfwd links %v", libs)
			}
			if f.Section(".symtab") != nil {
				t.Error("the installed pppfwd has a symbol table: not stripped (-s)")
			}
			f.Close()
			b, err := os.ReadFile(bin)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(b, []byte(root+"/")) {
				t.Errorf("the installed pppfwd holds the build directory %s: not -trimpath", root)
			}
		}
		makeIn("uninstall", "DESTDIR="+dest, "INSTALL_OS=Linux")
		if left := files(t, dest); len(left) > 0 {
			t.Errorf("make uninstall left %v", left)
		}
		if _, err := os.Stat(filepath.Join(dest, "etc/pppfwd")); err == nil {
			t.Error("make uninstall left the empty etc/pppfwd")
		}
	})

	t.Run("PrefixKeepsConf", func(t *testing.T) {
		dest := t.TempDir()
		conf := filepath.Join(dest, "srv/pf/pppfwd.conf")
		if err := os.MkdirAll(filepath.Dir(conf), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(conf, []byte("pppoe.user mine\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		vars := []string{"DESTDIR=" + dest, "INSTALL_OS=Linux", "PREFIX=/opt/pf", "CONFDIR=/srv/pf", "SYSTEMDUNITDIR=/etc/systemd/system"}
		makeIn(append([]string{"install"}, vars...)...)
		wantFiles(dest, map[string]fs.FileMode{
			"opt/pf/sbin/pppfwd": 0o755, "srv/pf/pppfwd.conf.example": 0o644, "srv/pf/pppfwd.conf": 0o600,
			"etc/systemd/system/pppfwd.service": 0o644,
		})
		if b, _ := os.ReadFile(conf); string(b) != "pppoe.user mine\n" {
			t.Errorf("make install changed pppfwd.conf: %q", b)
		}
		u := readUnit(t, filepath.Join(dest, "etc/systemd/system/pppfwd.service"))
		if got := u.one(t, "Service.ExecStart"); got != "/opt/pf/sbin/pppfwd run -c /srv/pf/pppfwd.conf" {
			t.Errorf("installed ExecStart=%s, want /opt/pf/sbin/pppfwd run -c /srv/pf/pppfwd.conf", got)
		}
		makeIn(append([]string{"uninstall"}, vars...)...)
		wantFiles(dest, map[string]fs.FileMode{"srv/pf/pppfwd.conf": 0o600})
	})

	t.Run("FreeBSD", func(t *testing.T) {
		dest := t.TempDir()
		makeIn("install", "DESTDIR="+dest, "INSTALL_OS=FreeBSD")
		wantFiles(dest, map[string]fs.FileMode{
			"usr/local/sbin/pppfwd": 0o755, "usr/local/etc/pppfwd/pppfwd.conf.example": 0o644, "usr/local/etc/rc.d/pppfwd": 0o755,
		})
		same(filepath.Join(dest, "usr/local/etc/rc.d/pppfwd"), "packaging/freebsd/rc.d/pppfwd")
		makeIn("uninstall", "DESTDIR="+dest, "INSTALL_OS=FreeBSD")
		if left := files(t, dest); len(left) > 0 {
			t.Errorf("make uninstall left %v", left)
		}
	})
}
