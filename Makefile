# pppfwd — see README.md. `make demo` runs the main job, `make test` runs
# every test, lint and cross-build (what CI runs).
GO        ?= go
GOBIN     := $(shell $(GO) env GOPATH)/bin
PKGS      := ./...
# Integration tests need root (namespaces, veth, XDP, qemu); they skip with
# the reason otherwise.
TESTFLAGS ?= -count=1 -timeout 25m

.PHONY: all build deps lint test unit race fuzz-smoke bench-smoke demo clean install uninstall

all: build

build:
	$(GO) build $(PKGS)
	$(GO) build -o bin/pppfwd ./cmd/pppfwd

deps:
	bash scripts/deps.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GOBIN)/staticcheck $(PKGS)
	GOOS=freebsd GOARCH=amd64 $(GO) build $(PKGS)
	GOOS=freebsd GOARCH=amd64 $(GO) vet $(PKGS)

unit:
	$(GO) test $(TESTFLAGS) $(PKGS)

# The race detector over the packages with concurrency of their own, and
# the namespace lab's router on real threads (skips when not root). The
# lab's fault tests time a loaded router (LCP echo deadlines, echoes
# after a flap); they run in `unit`, where the race detector's slowdown
# does not distort them.
race:
	$(GO) test -race -count=1 ./dataplane/... ./pppoe/... ./shaper/... ./nic/memport/...
	$(GO) test -race -count=1 -run 'TestIntegrationLab|TestIntegrationIngress' ./bench/lab

# Every fuzz target for a few seconds (their seed corpora already run in
# `unit`); FUZZTIME=1m for a longer look.
FUZZTIME ?= 4s
fuzz-smoke:
	FUZZTIME=$(FUZZTIME) GO=$(GO) bash scripts/fuzz-smoke.sh

# Every Go benchmark once, so none rots.
bench-smoke:
	$(GO) test -count=1 -run '^$$' -bench . -benchtime=1x $(PKGS)

test: deps lint unit race fuzz-smoke bench-smoke

# The main job: pppfwd in the namespace lab (a LAN host reaching the
# "Internet" through pppfwd's PPPoE session, NAT and workers; needs root),
# then the whole-pipeline benchmark on one and two workers, alternated
# round by round, with the 2-worker speedup.
demo: build
	@if [ "$$(id -u)" = 0 ]; then ./bin/pppfwd lab --workers 2; \
	else echo "demo: not root, skipping the namespace lab (pppfwd lab)"; fi
	./bin/pppfwd bench pipeline --workers 1,2 --flows 10000 --size 64 --duration 1s --rounds 5

# make install: a static pppfwd (CGO_ENABLED=0, -trimpath, stripped; VERSION,
# by default "git describe", is what "pppfwd version" prints), the example
# configuration (pppfwd.conf itself is never written or removed) and the
# service of the system it runs on: the systemd unit on Linux, the rc.d
# script on FreeBSD, their paths rewritten to SBINDIR and CONFDIR. It builds
# in a temporary directory and leaves nothing in the tree; where git cannot
# read the checkout (sudo make install in a user's clone) it builds without
# VCS stamping. DESTDIR stages the files (make install DESTDIR=/tmp/x needs
# no root); make uninstall removes what install put there, and CONFDIR when
# it is empty. Only make syntax that GNU make and FreeBSD's make share.
PREFIX         ?= /usr/local
SBINDIR        ?= $(PREFIX)/sbin
SYSTEMDUNITDIR ?= /lib/systemd/system
RCDIR          ?= $(PREFIX)/etc/rc.d
# CONFDIR: empty for /etc/pppfwd on Linux, $(PREFIX)/etc/pppfwd on FreeBSD.
CONFDIR        ?=
# INSTALL_OS: the system to install for, as uname -s names it (default: this one).
INSTALL_OS     ?=
VERSION        ?=
install_where = os='$(INSTALL_OS)'; [ -n "$$os" ] || os=$$(uname -s); \
	conf='$(CONFDIR)'; if [ -z "$$conf" ]; then \
		if [ "$$os" = FreeBSD ]; then conf='$(PREFIX)/etc/pppfwd'; else conf=/etc/pppfwd; fi; fi

install:
	@set -e; $(install_where); \
	mkd() { [ -d "$$1" ] || install -d -m 0755 "$$1"; }; \
	tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	v='$(VERSION)'; vcs=; \
	if git rev-parse --git-dir >/dev/null 2>&1; then \
		[ -n "$$v" ] || v=$$(git describe --tags --always --dirty 2>/dev/null || true); \
	else vcs=-buildvcs=false; fi; \
	echo "CGO_ENABLED=0 $(GO) build $${vcs:+$$vcs }-trimpath -ldflags '-s -w -X main.version=$$v' ./cmd/pppfwd"; \
	CGO_ENABLED=0 $(GO) build $$vcs -trimpath -ldflags "-s -w -X main.version=$$v" -o "$$tmp/pppfwd" ./cmd/pppfwd; \
	mkd "$(DESTDIR)$(SBINDIR)"; \
	install -m 0755 "$$tmp/pppfwd" "$(DESTDIR)$(SBINDIR)/pppfwd"; \
	echo "installed $(DESTDIR)$(SBINDIR)/pppfwd"; \
	mkd "$(DESTDIR)$$conf"; \
	install -m 0644 pppfwd.conf.example "$(DESTDIR)$$conf/pppfwd.conf.example"; \
	echo "installed $(DESTDIR)$$conf/pppfwd.conf.example"; \
	case "$$os" in \
	Linux) \
		sed -e "s|/usr/local/sbin/pppfwd|$(SBINDIR)/pppfwd|g" -e "s|/etc/pppfwd/pppfwd.conf|$$conf/pppfwd.conf|g" \
			packaging/systemd/pppfwd.service > "$$tmp/pppfwd.service"; \
		mkd "$(DESTDIR)$(SYSTEMDUNITDIR)"; \
		install -m 0644 "$$tmp/pppfwd.service" "$(DESTDIR)$(SYSTEMDUNITDIR)/pppfwd.service"; \
		echo "installed $(DESTDIR)$(SYSTEMDUNITDIR)/pppfwd.service";; \
	FreeBSD) \
		sed -e "s|/usr/local/sbin/pppfwd|$(SBINDIR)/pppfwd|g" -e "s|/usr/local/etc/pppfwd/pppfwd.conf|$$conf/pppfwd.conf|g" \
			packaging/freebsd/rc.d/pppfwd > "$$tmp/pppfwd.rc"; \
		mkd "$(DESTDIR)$(RCDIR)"; \
		install -m 0755 "$$tmp/pppfwd.rc" "$(DESTDIR)$(RCDIR)/pppfwd"; \
		echo "installed $(DESTDIR)$(RCDIR)/pppfwd";; \
	*) echo "install: no service definition for $$os (Linux: systemd, FreeBSD: rc.d)";; \
	esac; \
	if [ ! -e "$(DESTDIR)$$conf/pppfwd.conf" ]; then \
		echo "next: cp $$conf/pppfwd.conf.example $$conf/pppfwd.conf; chmod 600 $$conf/pppfwd.conf; then edit it"; fi

uninstall:
	@set -e; $(install_where); \
	rm -f "$(DESTDIR)$(SBINDIR)/pppfwd" "$(DESTDIR)$$conf/pppfwd.conf.example"; \
	case "$$os" in \
	Linux) rm -f "$(DESTDIR)$(SYSTEMDUNITDIR)/pppfwd.service";; \
	FreeBSD) rm -f "$(DESTDIR)$(RCDIR)/pppfwd";; \
	esac; \
	if [ -d "$(DESTDIR)$$conf" ]; then \
		rmdir "$(DESTDIR)$$conf" 2>/dev/null || echo "uninstall: kept $(DESTDIR)$$conf and what is in it (pppfwd.conf)"; fi

clean:
	rm -rf bin
