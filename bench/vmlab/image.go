package vmlab

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/elf"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

//go:embed guest/init guest/init.sh
var guestFiles embed.FS

// imageFormat changes whenever the image layout or contents change, so a
// stale cache is rebuilt rather than used.
const imageFormat = "vmlab-image-3"

// basePackages are installed into the initramfs; Depends on lib* packages
// are followed from them (see libClosure). The kernel package is resolved
// from the linux-image-amd64 metapackage. nftables and iproute2 (the real
// ip and tc, which shadow busybox's applets) serve the kernel router: nft
// for forwarding rules and masquerade, tc for cake, fq_codel and htb.
// zlib1g is a library that libClosure does not follow (its name lacks the
// lib prefix); iproute2's libelf1 needs it. kea-dhcp6-server is the real
// DHCPv6 server that pppfwd's prefix-delegation client is tested against
// on pppd's ppp interface (ISC dhcpd 4.4 refuses ppp interfaces:
// "Unsupported device type 512"); its libraries are in kea-common, which
// libClosure does not follow.
var basePackages = []string{"ppp", "pppoe", "busybox-static", "bash", "libc6", "libc-bin",
	"nftables", "iproute2", "zlib1g", "kea-dhcp6-server", "kea-common"}

// GuestModules are the kernel modules loaded at boot (their dependencies,
// read from each module's .modinfo, are added and loaded first). The
// netfilter ones give nftables its ip, ip6 and inet tables, conntrack
// (ct expressions), NAT chains and masquerade; nf_tables itself holds the
// counter, rt and exthdr expressions (TCP MSS clamping). crc32c_generic
// is libcrc32c's soft dependency (conntrack's; moduleClosure follows only
// hard ones): without it libcrc32c fails to initialise. sch_htb and
// sch_cake are the shapers the kernel router is measured with; fq_codel is
// built into Debian's kernel (and is its default qdisc), so it is not here.
var GuestModules = []string{
	"virtio_pci", "virtio_net",
	"slhc", "ppp_generic", "ppp_async", "pppox", "pppoe",
	"crc32c_generic", "nf_conntrack", "nf_nat", "nf_tables", "nft_ct", "nft_chain_nat", "nft_nat", "nft_masq",
	"sch_htb", "sch_cake",
}

// libExcluded are lib* packages that are never needed at run time here and
// would drag in perl or PAM configuration.
func libExcluded(name string) bool {
	return strings.HasSuffix(name, "-perl") || strings.HasPrefix(name, "libpam-") ||
		strings.HasSuffix(name, "-common") || strings.HasSuffix(name, "-bin")
}

// guestELFs must have all their DT_NEEDED libraries in the image.
var guestELFs = []string{
	"bin/bash", "usr/sbin/pppd", "usr/sbin/pppoe-server", "usr/sbin/pppoe",
	"usr/sbin/pppoe-discovery", "sbin/ldconfig",
	"usr/sbin/nft", "bin/ip", "sbin/tc", "usr/sbin/kea-dhcp6",
}

// Image is a built lab image.
type Image struct {
	Dir           string // cache directory holding the files below
	Kernel        string // path of vmlinuz
	Initramfs     string // path of the gzip'd newc initramfs
	KernelVersion string // e.g. 6.1.0-57-amd64
	Packages      []string
	Modules       []string // load order
}

// DefaultCacheDir is where images are cached: $VMLAB_CACHE if set, else
// <user cache dir>/pppfwd-vmlab (e.g. ~/.cache/pppfwd-vmlab).
func DefaultCacheDir() string {
	if d := os.Getenv("VMLAB_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "pppfwd-vmlab")
	}
	return filepath.Join(os.TempDir(), "pppfwd-vmlab")
}

// imageKey names the cache entry: the format, the guest scripts, the module
// and package lists. The kernel version is whatever apt had when the entry
// was built; delete the cache directory to pick up a newer one.
func imageKey() string {
	h := sha256.New()
	h.Write([]byte(imageFormat))
	_ = fs.WalkDir(guestFiles, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			b, _ := guestFiles.ReadFile(p)
			fmt.Fprintf(h, "%s %d\n", p, len(b))
			h.Write(b)
		}
		return nil
	})
	fmt.Fprintln(h, strings.Join(basePackages, " "), strings.Join(GuestModules, " "))
	return "img-" + hex.EncodeToString(h.Sum(nil))[:16]
}

// LoadImage returns the cached image in cacheDir ("" = DefaultCacheDir), or
// an error matching fs.ErrNotExist when it has not been built.
func LoadImage(cacheDir string) (*Image, error) {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	dir := filepath.Join(cacheDir, imageKey())
	b, err := os.ReadFile(filepath.Join(dir, "image.json"))
	if err != nil {
		return nil, err
	}
	var img Image
	if err := json.Unmarshal(b, &img); err != nil {
		return nil, fmt.Errorf("vmlab: %s: %w", dir, err)
	}
	img.Dir = dir
	img.Kernel = filepath.Join(dir, "vmlinuz")
	img.Initramfs = filepath.Join(dir, "initramfs.gz")
	for _, p := range []string{img.Kernel, img.Initramfs} {
		if _, err := os.Stat(p); err != nil {
			return nil, err
		}
	}
	return &img, nil
}

// BuildImage returns the cached image, building it first if needed: apt-get
// download of the packages, dpkg-deb -x, module and library closure, cpio,
// gzip. Building needs apt lists (apt-get update, done by
// scripts/vmlab-deps.sh) and takes under a minute. Concurrent builders each
// build in a private directory and the first rename wins. logf may be nil.
func BuildImage(ctx context.Context, cacheDir string, logf func(string, ...any)) (*Image, error) {
	if cacheDir == "" {
		cacheDir = DefaultCacheDir()
	}
	if img, err := LoadImage(cacheDir); err == nil {
		return img, nil
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(cacheDir, "build-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	out := filepath.Join(work, "out")
	img, err := buildInto(ctx, work, out, logf)
	if err != nil {
		return nil, fmt.Errorf("vmlab: building image: %w", err)
	}
	final := filepath.Join(cacheDir, imageKey())
	if err := os.Rename(out, final); err != nil {
		if loaded, lerr := LoadImage(cacheDir); lerr == nil {
			return loaded, nil // another builder won the race
		}
		return nil, err
	}
	_ = img
	return LoadImage(cacheDir)
}

func run(ctx context.Context, dir string, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return b, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return b, nil
}

func buildInto(ctx context.Context, work, out string, logf func(string, ...any)) (*Image, error) {
	dl := filepath.Join(work, "debs")
	root := filepath.Join(work, "root")
	kroot := filepath.Join(work, "kernel")
	for _, d := range []string{dl, root, kroot, out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	kpkg, err := kernelPackage(ctx)
	if err != nil {
		return nil, err
	}
	pkgs, err := libClosure(ctx, basePackages)
	if err != nil {
		return nil, err
	}
	logf("vmlab: downloading %s and %d packages", kpkg, len(pkgs))
	args := append([]string{"-q", "-o", "APT::Sandbox::User=root", "download", kpkg}, pkgs...)
	if _, err := run(ctx, dl, "apt-get", args...); err != nil {
		return nil, fmt.Errorf("%w (run scripts/vmlab-deps.sh, which runs apt-get update)", err)
	}
	debs, err := filepath.Glob(filepath.Join(dl, "*.deb"))
	if err != nil {
		return nil, err
	}
	for _, deb := range debs {
		dst := root
		if strings.HasPrefix(filepath.Base(deb), kpkg+"_") {
			dst = kroot
		}
		if _, err := run(ctx, work, "dpkg-deb", "-x", deb, dst); err != nil {
			return nil, err
		}
	}
	for _, junk := range []string{"usr/share/doc", "usr/share/man", "usr/share/info",
		"usr/share/locale", "usr/share/lintian", "usr/share/bug", "usr/lib/x86_64-linux-gnu/gconv",
		"usr/lib/x86_64-linux-gnu/kea/hooks"} {
		if err := os.RemoveAll(filepath.Join(root, junk)); err != nil {
			return nil, err
		}
	}

	kver := strings.TrimPrefix(kpkg, "linux-image-")
	vmlinuz := filepath.Join(kroot, "boot", "vmlinuz-"+kver)
	if err := copyFile(vmlinuz, filepath.Join(out, "vmlinuz")); err != nil {
		return nil, err
	}
	mods, err := moduleClosure(filepath.Join(kroot, "lib", "modules", kver), GuestModules)
	if err != nil {
		return nil, err
	}
	modDir := filepath.Join(root, "vmlab", "modules")
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		return nil, err
	}
	var order bytes.Buffer
	for _, m := range mods {
		if err := copyFile(m.path, filepath.Join(modDir, m.name+".ko")); err != nil {
			return nil, err
		}
		fmt.Fprintln(&order, m.name)
	}
	if err := os.WriteFile(filepath.Join(root, "vmlab", "modules.order"), order.Bytes(), 0o644); err != nil {
		return nil, err
	}
	if err := writeGuestFiles(root); err != nil {
		return nil, err
	}
	if err := checkLibs(root, guestELFs); err != nil {
		return nil, err
	}

	f, err := os.Create(filepath.Join(out, "initramfs.gz"))
	if err != nil {
		return nil, err
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestSpeed)
	if err := writeCpioTree(zw, root); err != nil {
		f.Close()
		return nil, err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	img := &Image{KernelVersion: kver, Packages: append([]string{kpkg}, pkgs...)}
	for _, m := range mods {
		img.Modules = append(img.Modules, m.name)
	}
	b, _ := json.MarshalIndent(img, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "image.json"), b, 0o644); err != nil {
		return nil, err
	}
	logf("vmlab: built image for kernel %s, modules %v", kver, img.Modules)
	return img, nil
}

// writeGuestFiles installs the init scripts and minimal /etc files.
func writeGuestFiles(root string) error {
	files := map[string]string{
		"etc/passwd":        "root:x:0:0:root:/root:/bin/bash\n",
		"etc/group":         "root:x:0:\ndip:x:30:\ntty:x:5:\n",
		"etc/hosts":         "127.0.0.1 localhost vmlab\n",
		"etc/nsswitch.conf": "passwd: files\ngroup: files\nhosts: files\n",
		// Debian's /etc/ppp/options says "auth", "lock", "crtscts"...: the
		// lab starts from an empty one so that tests state every option.
		"etc/ppp/options": "# vmlab: empty on purpose; tests pass every option\n",
	}
	for p, s := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			return err
		}
	}
	// pppd runs pty/connect scripts (pppoe-server's user-mode relay) with
	// /bin/sh -c and exits 99 when there is none.
	if err := os.Symlink("bash", filepath.Join(root, "bin", "sh")); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	for src, dst := range map[string]string{"guest/init": "init", "guest/init.sh": "vmlab/init.sh"} {
		b, err := guestFiles.ReadFile(src)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(root, dst), b, 0o755); err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// kernelPackage resolves the linux-image-amd64 metapackage to the versioned
// kernel package (e.g. linux-image-6.1.0-57-amd64).
func kernelPackage(ctx context.Context) (string, error) {
	b, err := run(ctx, "", "apt-cache", "depends", "linux-image-amd64")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if v, ok := strings.CutPrefix(l, "Depends: "); ok && strings.HasPrefix(v, "linux-image-") {
			return v, nil
		}
	}
	return "", fmt.Errorf("apt-cache depends linux-image-amd64 names no kernel (run scripts/vmlab-deps.sh, which runs apt-get update): %q", b)
}

// parseDepends returns the first alternative of each dependency in a
// Depends/Pre-Depends field, without version constraints or arch qualifiers.
func parseDepends(field string) []string {
	var out []string
	for _, dep := range strings.Split(field, ",") {
		alt := strings.TrimSpace(strings.Split(dep, "|")[0])
		if i := strings.IndexAny(alt, " ("); i >= 0 {
			alt = alt[:i]
		}
		alt, _, _ = strings.Cut(alt, ":")
		if alt != "" {
			out = append(out, alt)
		}
	}
	return out
}

// libClosure adds to pkgs every lib* package reachable through Depends and
// Pre-Depends (first alternative), minus libExcluded.
func libClosure(ctx context.Context, pkgs []string) ([]string, error) {
	have := map[string]bool{}
	todo := append([]string(nil), pkgs...)
	for _, p := range pkgs {
		have[p] = true
	}
	for len(todo) > 0 {
		args := append([]string{"show", "--no-all-versions"}, todo...)
		b, err := run(ctx, "", "apt-cache", args...)
		if err != nil {
			return nil, fmt.Errorf("%w (run scripts/vmlab-deps.sh, which runs apt-get update)", err)
		}
		todo = todo[:0]
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l := sc.Text()
			var field string
			if v, ok := strings.CutPrefix(l, "Depends: "); ok {
				field = v
			} else if v, ok := strings.CutPrefix(l, "Pre-Depends: "); ok {
				field = v
			} else {
				continue
			}
			for _, d := range parseDepends(field) {
				if !have[d] && strings.HasPrefix(d, "lib") && !libExcluded(d) {
					have[d] = true
					todo = append(todo, d)
				}
			}
		}
	}
	out := make([]string, 0, len(have))
	for p := range have {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

type module struct{ name, path string }

// modName normalises a module file or dependency name (dashes are
// underscores to the kernel).
func modName(s string) string {
	return strings.ReplaceAll(strings.TrimSuffix(filepath.Base(s), ".ko"), "-", "_")
}

// modinfoDepends reads the depends= entry of a module's .modinfo section.
func modinfoDepends(path string) ([]string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return nil, fmt.Errorf("%s: no .modinfo", path)
	}
	b, err := s.Data()
	if err != nil {
		return nil, err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte("depends=")); ok {
			var deps []string
			for _, d := range strings.Split(string(v), ",") {
				if d != "" {
					deps = append(deps, modName(d))
				}
			}
			return deps, nil
		}
	}
	return nil, nil
}

// moduleClosure finds the wanted modules under modRoot and orders them with
// their dependencies first. A wanted module that is missing is an error
// (built-in modules are not in the package: drop them from the list).
func moduleClosure(modRoot string, wanted []string) ([]module, error) {
	paths := map[string]string{}
	err := filepath.WalkDir(modRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".ko") {
			paths[modName(p)] = p
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []module
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(string) error
	visit = func(n string) error {
		switch state[n] {
		case 1:
			return fmt.Errorf("module dependency cycle at %s", n)
		case 2:
			return nil
		}
		p, ok := paths[n]
		if !ok {
			return fmt.Errorf("module %s not in %s", n, modRoot)
		}
		state[n] = 1
		deps, err := modinfoDepends(p)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d); err != nil {
				return err
			}
		}
		state[n] = 2
		out = append(out, module{n, p})
		return nil
	}
	for _, w := range wanted {
		if err := visit(modName(w)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkLibs verifies that every DT_NEEDED library of the given ELF files
// (and of those libraries) is present in the image's library directories.
func checkLibs(root string, elfs []string) error {
	dirs := []string{"lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"}
	find := func(soname string) string {
		for _, d := range dirs {
			p := filepath.Join(root, d, soname)
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
		return ""
	}
	var missing []string
	seen := map[string]bool{}
	var walk func(path, what string) error
	walk = func(path, what string) error {
		f, err := elf.Open(path)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		libs, err := f.ImportedLibraries()
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		for _, l := range libs {
			if seen[l] {
				continue
			}
			seen[l] = true
			p := find(l)
			if p == "" {
				missing = append(missing, l+" (needed by "+what+")")
				continue
			}
			if err := walk(p, l); err != nil {
				return err
			}
		}
		return nil
	}
	for _, e := range elfs {
		if err := walk(filepath.Join(root, e), e); err != nil {
			return err
		}
	}
	if len(missing) > 0 {
		return errors.New("libraries missing from the image: " + strings.Join(missing, ", "))
	}
	return nil
}
